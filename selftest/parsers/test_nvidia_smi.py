"""nvidia-smi parsers on the REAL H200 captures and the public GB10/RTX PRO lines (infra.md §5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmval.core.errors import ParseError
from llmval.parsers.nvidia_smi import (
    GPU_QUERY_FIELDS,
    normalize_bus_id,
    parse_nvidia_smi_query,
    parse_nvidia_smi_topo_p2p,
    parse_nvidia_smi_xml,
)
from selftest.strategies import ROOT

REAL = ROOT / "selftest" / "data" / "real" / "h200x2"
FULL_FIELDS = ("index", "name", "uuid", "pci.bus_id", "driver_version", "compute_cap", "memory.total", "memory.used",
               "persistence_mode", "ecc.errors.uncorrected.volatile.total")


def test_real_h200_short_query_parses():
    gpus = parse_nvidia_smi_query((REAL / "nvidia-smi-query-short.csv").read_text(), GPU_QUERY_FIELDS)
    assert [(g.index, g.name, g.compute_cap, g.memory_total_mib, g.bus_id) for g in gpus] == [
        (0, "NVIDIA H200", "9.0", 143771, "0000:00:06.0"), (1, "NVIDIA H200", "9.0", 143771, "0000:00:07.0")]
    assert gpus[0].uuid == "GPU-f0ecef23-efd0-da82-6386-a8d2dc688daf" and gpus[0].driver_version == "580.159.04"


@pytest.mark.parametrize("name", ["nvidia-smi-query.csv", "nvidia-smi-query-busy.csv"])
def test_real_h200_long_query_parses_with_its_field_list(name):
    gpus = parse_nvidia_smi_query((REAL / name).read_text(), FULL_FIELDS)
    assert [g.compute_cap for g in gpus] == ["9.0", "9.0"]


def test_header_form_is_a_parse_error_not_a_gpu():
    with pytest.raises(ParseError, match="index is not a number"):
        parse_nvidia_smi_query((REAL / "nvidia-smi-query-header.csv").read_text(), FULL_FIELDS)


def test_gb10_memory_not_available_is_none():
    # shape of the public GB10 rows (`NVIDIA GB10, 12.1, [N/A]`, infra.md §5.2) in our field order
    gpus = parse_nvidia_smi_query("0, NVIDIA GB10, GPU-a, 0000000F:01:00.0, 580.95.05, 12.1, [N/A]\n")
    assert gpus[0].memory_total_mib is None and gpus[0].compute_cap == "12.1" and gpus[0].bus_id == "000f:01:00.0"


def test_driver_failure_text_is_a_parse_error():
    with pytest.raises(ParseError, match="cannot talk to the driver"):
        parse_nvidia_smi_query("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


def test_no_gpu_is_an_empty_list():
    assert parse_nvidia_smi_query("") == []


def test_real_h200_xml_gives_versions_minors_and_architecture():
    log = parse_nvidia_smi_xml((REAL / "nvidia-smi-q.xml").read_text())
    assert (log.driver_version, log.cuda_version, log.attached_gpus) == ("580.159.04", "13.0", 2)
    assert [(g.bus_id, g.minor_number, g.architecture, g.memory_total_mib) for g in log.gpus] == [
        ("0000:00:06.0", 0, "Hopper", 143771), ("0000:00:07.0", 1, "Hopper", 143771)]


def test_xml_that_is_not_nvidia_smi_is_a_parse_error():
    with pytest.raises(ParseError, match="not XML"):
        parse_nvidia_smi_xml((REAL / "nvidia-smi-q.txt").read_text())


@pytest.mark.parametrize(("raw", "normal"), [("00000000:01:00.0", "0000:01:00.0"), ("0000:C1:00.0", "0000:c1:00.0"),
                                               ("01:00.0", "0000:01:00.0"), ("0000000F:01:00.0", "000f:01:00.0")])
def test_bus_id_spellings_normalize_alike(raw, normal):
    assert normalize_bus_id(raw) == normal


GPU_NAMES = st.sampled_from(["NVIDIA H200", "NVIDIA GB10", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                             "Weird, Inc. GPU, rev 2"])


@st.composite
def gpu_rows(draw):
    n = draw(st.integers(min_value=0, max_value=8))
    rows = []
    for i in range(n):
        mem = draw(st.one_of(st.just("[N/A]"), st.integers(min_value=1, max_value=300_000).map(str)))
        rows.append((i, draw(GPU_NAMES), f"GPU-{i:08x}", f"00000000:{i + 1:02X}:00.0", "580.95.05",
                     draw(st.sampled_from(["9.0", "12.0", "12.1"])), mem))
    return rows


@given(rows=gpu_rows())
def test_query_rows_roundtrip(rows):
    text = "".join(", ".join(map(str, r)) + "\n" for r in rows)
    parsed = parse_nvidia_smi_query(text)
    assert [(g.index, g.name, g.compute_cap) for g in parsed] == [(r[0], r[1], r[5]) for r in rows]
    assert [g.memory_total_mib for g in parsed] == [None if r[6] == "[N/A]" else int(r[6]) for r in rows]


@pytest.mark.parametrize(("mode", "status"), [("r", "OK"), ("w", "OK"), ("n", "OK"), ("a", "OK"), ("p", "NS")])
def test_real_h200_topo_p2p_matrix_parses_through_ansi_header(mode, status):
    matrix = parse_nvidia_smi_topo_p2p((REAL / f"nvidia-smi-topo-p2p-{mode}.txt").read_text())
    assert matrix == {("GPU0", "GPU1"): status, ("GPU1", "GPU0"): status}


@given(n=st.integers(min_value=1, max_value=8), statuses=st.lists(st.sampled_from(["OK", "CNS", "GNS", "TNS", "NS",
                                                                                      "DR", "U"]), min_size=64,
                                                                    max_size=64))
def test_topo_p2p_render_parse_roundtrip(n, statuses):
    names = [f"GPU{i}" for i in range(n)]
    want = {(a, b): statuses[i * 8 + j] for i, a in enumerate(names) for j, b in enumerate(names) if a != b}
    lines = [" \t\x1b[4m" + "\t".join(names) + "\t\x1b[0m"]
    lines += [f" {a}\t" + "\t".join("X" if a == b else want[(a, b)] for b in names) + "\t" for a in names]
    assert parse_nvidia_smi_topo_p2p("\n".join([*lines, "", "Legend:", "  X    = Self"])) == want


@pytest.mark.parametrize(("cut", "why"), [
    (lambda t: t.splitlines()[0], "has no newline"),  # cut on a row boundary, before the row's newline
    (lambda t: t.splitlines(keepends=True)[1], r"indices \[1\]"),  # the first row lost (a tail-capped answer)
])
def test_a_cut_query_answer_is_a_parse_error_never_fewer_gpus(cut, why):
    """Issue 21.5: the REAL two-GPU H200 answer cut after its first row read as "1 GPU"."""
    real = (REAL / "nvidia-smi-query-short.csv").read_text()
    assert len(parse_nvidia_smi_query(real)) == 2
    with pytest.raises(ParseError, match=why):
        parse_nvidia_smi_query(cut(real))


def test_topo_p2p_disabled_by_regkey_is_a_status():
    """Issue 21.5: driver 610 prints `DR   = Disabled by regkey` in the legend (a public RTX PRO 6000 report,
    610.43.02), so `DR` can be a cell; it was a parse error ("row does not match the header")."""
    real = (REAL / "nvidia-smi-topo-p2p-r.txt").read_text()  # the REAL H200 layout (tabs, ANSI header)
    text = real.replace(" GPU0\tX\tOK", " GPU0\tX\tDR").replace(" GPU1\tOK\tX", " GPU1\tDR\tX")
    text = text.replace("  NS   = Not supported\n", "  NS   = Not supported\n  DR   = Disabled by regkey\n")
    assert "DR" in text and parse_nvidia_smi_topo_p2p(text) == {("GPU0", "GPU1"): "DR", ("GPU1", "GPU0"): "DR"}


def test_topo_p2p_without_matrix_is_a_parse_error():
    with pytest.raises(ParseError, match="topo -p2p"):
        parse_nvidia_smi_topo_p2p("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
