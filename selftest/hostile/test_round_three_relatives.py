"""Relatives of issue 45's doors, not named there: each input exits cleanly (exit 4 or could-not-check naming it, no
traceback, memory under 1 GiB).

Measured on the landed integ branch before the fixes here:
- a recording line of 250 MB (under the 256 MiB file cap) was replayed whole: 1,006 MiB RSS; now refused before it is
  copied, naming file and line (`llmval.io.recording.MAX_LINE_BYTES`, 128 MiB);
- `nvidia-smi -q -x` with a health subtree 100,000 deep: `RecursionError` in `parsers.gpu_health`; a billion-laughs
  entity was stopped only by the bundled expat's amplification limit ("not XML (limit on input amplification factor
  ...)", absent from expat before 2.4.1); now both are a ParseError naming `nvidia-smi -q -x` and why;
- a host command printing NUL and invalid UTF-8 bytes (journald's `-o cat` of a binary-ish log): `UnicodeDecodeError`
  traceback out of testinfra's decode; now each bad byte is U+FFFD and the read goes on.
Already bounded, pinned here so they stay so: a 300 MB recording file, a /metrics line of 10 MB, a pct command that
prints forever and never ends, an inventory TOML 100,000 deep or of 50 MB, a 1 GB results.json in history/ (trend
and `previous_results`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from llmval.core.errors import CommandTimeout, InventoryError, ParseError
from llmval.engines.logs import parse_vllm_log
from llmval.engines.metrics import parse_metrics
from llmval.hostfacts import UNAME, log_command
from llmval.inventory import HostSpec, load_inventory, parse_inventory
from llmval.inventory.hosts import LocalTransport
from llmval.io.recording import MAX_FILE_BYTES, MAX_LINE_BYTES
from llmval.io.transport import MAX_OUTPUT_BYTES, connect
from llmval.parsers.gpu_health import parse_gpu_health_xml
from llmval.parsers.nvidia_smi import MAX_XML_DEPTH, parse_nvidia_smi_xml
from llmval.report.results import previous_results
from selftest.report.trend_runs import DEPLOYMENT, write_nights
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
GIB_KIB = 1 << 20  # ru_maxrss is in KiB


def _python_rss(code: str, *args: str) -> tuple[str, int]:
    """`code` run in a fresh interpreter: (what it printed, its peak RSS in KiB)."""
    probe = (textwrap.dedent(code)
             + "\nimport resource\nprint('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "Traceback" not in out.stderr, out.stderr
    text, _, rss = out.stdout.rpartition("RSS ")
    return text, int(rss)


@pytest.mark.subprocess
@pytest.mark.parametrize("size", [MAX_LINE_BYTES + 1, 300_000_000], ids=["over-the-line-cap", "300MB"])
def test_a_huge_recording_line_is_refused_naming_file_and_line(tmp_path, size):
    """One line of NUL bytes (a sparse file: no disk) over the line cap, or 300 MB (over the file cap too)."""
    folder = tmp_path / "recording"
    folder.mkdir()
    with open(folder / "commands-1.jsonl", "wb") as out:
        out.truncate(size)
    said, rss = _python_rss("""
        import sys, pathlib
        from llmval.core.errors import RecordingError
        from llmval.io.recording import Replay
        try:
            Replay(pathlib.Path(sys.argv[1]))
        except RecordingError as error:
            print(error)
        """, str(folder))
    where = f"{folder / 'commands-1.jsonl'}"
    if size > MAX_FILE_BYTES:
        assert f"{where}: {size} bytes, over the cap of {MAX_FILE_BYTES}" in said, said
    else:
        assert f"{where}:1: a line of {size} bytes, over the {MAX_LINE_BYTES}" in said, said
    assert rss < GIB_KIB // 2, rss  # the file's bytes at most (134 MiB), never a copy of the line


def test_a_metrics_line_of_10_mb_is_refused_naming_the_scrape():
    text = 'vllm:kv_cache_usage_perc{engine="' + "x" * 10_000_000 + '"} 0.5\n'
    with pytest.raises(ParseError, match=r"\[e\] /metrics.*a line of 10000039 characters, over the 65536"):
        parse_metrics(text, "[e] /metrics", families=["vllm:kv_cache_usage_perc"])


LAUGHS = ('<?xml version="1.0"?>\n<!-- <!DOCTYPE nvidia_smi_log> -->\n'
          '<!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaaaaaaaa">'
          + "".join(f'<!ENTITY {b} "{("&" + a + ";") * 10}">' for a, b in zip("abcdefgh", "bcdefghi", strict=True))
          + ']>\n<nvidia_smi_log><driver_version>&i;</driver_version></nvidia_smi_log>\n')
"""A billion laughs (10^9 characters), its DOCTYPE behind a commented one (the parser drops the first DOCTYPE line)."""


@pytest.mark.parametrize("parse", [parse_nvidia_smi_xml, parse_gpu_health_xml], ids=["gpus", "health"])
def test_nvidia_smi_xml_with_an_entity_bomb_is_refused_not_expanded(parse):
    with pytest.raises(ParseError, match=r"nvidia-smi -q -x: declares XML entities .* refused, not expanded"):
        parse(LAUGHS)


@pytest.mark.parametrize("parse", [parse_nvidia_smi_xml, parse_gpu_health_xml], ids=["gpus", "health"])
def test_nvidia_smi_xml_nested_100000_deep_is_refused_while_it_is_parsed(parse):
    """Under `<ecc_errors>` (a subtree `parse_gpu_health_xml` walks): a RecursionError there before."""
    deep = ('<nvidia_smi_log><driver_version>580.1</driver_version><gpu id="00000000:01:00.0"><ecc_errors>'
            + "<x>" * 100_000 + "</x>" * 100_000 + "</ecc_errors></gpu></nvidia_smi_log>")
    with pytest.raises(ParseError, match=f"nvidia-smi -q -x: elements nested over {MAX_XML_DEPTH} deep"):
        parse(deep)


def test_real_nvidia_smi_xml_still_parses():
    """The REAL H200 capture (its DOCTYPE line kept) reads as before."""
    for capture in ("h200x2/nvidia-smi-q.xml", "h200x2-health/nvidia-smi-q.xml"):
        text = (ROOT / "selftest" / "data" / "real" / capture).read_text()
        assert len(parse_nvidia_smi_xml(text).gpus) == 2 and len(parse_gpu_health_xml(text)) == 2


@pytest.mark.slow
def test_a_pct_command_that_prints_forever_and_never_ends_is_a_timeout_with_its_output_bounded(tmp_path, monkeypatch):
    """ssh (here a stand-in on PATH for the node's ssh) running `pct exec` that prints without end: killed at the
    host's timeout plus the remote grace, its output capped while read, CommandTimeout naming the host."""
    (tmp_path / "ssh").write_text("#!/bin/sh\nexec yes 'a line of a command that never ends'\n")
    (tmp_path / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    inventory = parse_inventory({"deployment": {"name": "x", "kind": "lab", "goal": "g"}, "hosts": [
        {"name": "node", "platform": "p", "transport": {"kind": "ssh", "address": "127.0.0.1"}, "timeout_s": 1},
        {"name": "ct", "platform": "p", "transport": {"kind": "pct", "via": "node", "container": 129},
         "timeout_s": 1}]})
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"\[ct\] no answer within 1 s \(killed\)") as raised:
        connect(inventory.host("ct"), inventory=inventory).run(UNAME.render())
    assert time.monotonic() - started < 15
    assert len(str(raised.value)) < 2 * MAX_OUTPUT_BYTES


def _fake_tools(tmp_path, **scripts: str):
    for name, body in scripts.items():
        (tmp_path / name).write_text("#!/bin/sh\n" + body + "\n")
        (tmp_path / name).chmod(0o755)
    return connect(HostSpec(name="me", platform="p", transport=LocalTransport(path_prepend=[str(tmp_path)])))


def test_command_output_with_nul_and_invalid_utf8_is_read_with_each_bad_byte_replaced(tmp_path):
    conn = _fake_tools(tmp_path, uname="printf 'Linux \\000\\377\\376 me\\n'")
    assert conn.run(UNAME.render()).stdout == "Linux \x00\ufffd\ufffd me\n"


def test_a_journal_with_nul_bytes_and_invalid_utf8_is_read_by_the_engine_log_reads(tmp_path):
    """The declared journal reads (evidence and error windows) over a journal whose lines hold NUL and bytes that
    are not UTF-8 (a binary payload logged by the unit): read, parsed, the lines around kept."""
    journal = ("(APIServer pid=1) INFO 12-06 10:00:00 [api_utils.py:1] non-default args: {'model': '/m', "
               "'tensor_parallel_size': 2}\\n"
               "garbage \\000\\377\\376\\300 from the unit\\n"
               "(APIServer pid=1) ERROR 12-06 10:00:05 [core.py:1] RuntimeError: \\377 bad byte in an error\\n")
    conn = _fake_tools(tmp_path, systemctl="echo inv1", journalctl=f"printf \"{journal}\"")
    window = conn.run(log_command("journal:vllm")).stdout
    assert parse_vllm_log(window).tensor_parallel_size == 2
    errors = conn.run(log_command("journal:vllm", errors=True)).stdout
    assert errors == "(APIServer pid=1) ERROR 12-06 10:00:05 [core.py:1] RuntimeError: \ufffd bad byte in an error\n"


def test_an_inventory_100000_deep_or_of_50_mb_is_an_inventory_error(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InventoryError, match="malformed TOML: nested too deeply"):
        load_inventory(deep)
    tables = tmp_path / "tables.toml"
    tables.write_text("a = " + "{b = " * 100_000 + "1" + "}" * 100_000 + "\n")
    with pytest.raises(InventoryError, match="malformed TOML: nested too deeply"):
        load_inventory(tables)
    big = tmp_path / "big.toml"
    with open(big, "wb") as out:
        out.truncate(50_000_000)  # sparse: never written, refused by its size
    with pytest.raises(InventoryError, match="cannot read: 50000000 bytes, over the 16 MiB"):
        load_inventory(big)


@pytest.mark.subprocess
def test_a_1_gb_results_json_in_history_is_named_by_trend_and_skipped_by_the_next_run(tmp_path):
    """Three SYNTHESIZED nights (selftest/report/trend_runs.py) and, newest, a results file of 1 GiB (sparse: no
    disk): `llmval trend --history` is exit 4 naming it; the next run's `previous_results` passes over it to the
    newest readable run, reading none of it."""
    reports = tmp_path / "reports"
    nights = write_nights(reports)
    huge = nights[-1].with_name(nights[-1].name.replace("20261203", "20261204"))
    assert huge != nights[-1]
    with open(huge, "wb") as out:
        out.truncate(1 << 30)
    trend = subprocess.run([sys.executable, "-m", "llmval", "trend", "--history", str(reports / "history"), "--out",
                            str(tmp_path / "trend")], capture_output=True, text=True, timeout=120)
    assert trend.returncode == 4, trend
    assert f"{huge}" in trend.stderr and "1073741824 bytes, over the 64 MiB" in trend.stderr, trend.stderr
    assert "Traceback" not in trend.stderr
    passed_over: list[str] = []
    found = previous_results(reports, DEPLOYMENT, passed_over=passed_over)
    assert found is not None and found[0] == nights[-1], found
    assert passed_over == [f"history/{huge.name}: 1073741824 bytes, over the 64 MiB the suite reads of it"]


@pytest.mark.subprocess
def test_a_run_says_which_history_file_it_could_not_read_as_its_previous_run(pytester):
    """A replay of the SYNTHESIZED kpro6 recording whose reports/replay/history/ holds, newest, a results file of
    1 GiB (sparse): the run compares with none of it and its status.md names it and why."""
    history = pytester.path / "reports" / "replay" / "history"
    history.mkdir(parents=True)
    huge = history / "results-20991231T000000Z-kpro6.json"
    with open(huge, "wb") as out:
        out.truncate(1 << 30)
    pytester.chdir()
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                          str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests"), "-m", "smoke",
                          "-p", "no:xdist", "--inventory", str(ROOT / "inventories" / "kpro6.toml"), "--replay",
                          str(ROOT / "selftest" / "data" / "replays" / "SYNTHESIZED-kpro6-sglang-healthy"),
                          timeout=300)
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    status = (pytester.path / "reports" / "replay" / "status.md").read_text()
    assert (f"Not read as a previous run (compared with an older one): history/{huge.name}: 1073741824 bytes, over "
            "the 64 MiB the suite reads of it.") in status, status[:3000]
