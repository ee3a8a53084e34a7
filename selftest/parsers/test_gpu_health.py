"""GPU health parsers: the health fields of the REAL H200 `nvidia-smi -q -x`, and Xid lines of the kernel log."""

from __future__ import annotations

import pytest

from llmval.core.errors import ParseError
from llmval.parsers.gpu_health import has_boot_banner, is_reported, parse_gpu_health_xml, parse_xid_lines
from selftest.strategies import ROOT

REAL = ROOT / "selftest" / "data" / "real" / "h200x2"


def test_real_h200_xml_carries_every_health_field():
    gpus = parse_gpu_health_xml((REAL / "nvidia-smi-q.xml").read_text())
    assert [g.bus_id for g in gpus] == ["0000:00:06.0", "0000:00:07.0"]
    f = gpus[0].fields
    assert (f["persistence_mode"], f["performance_state"]) == ("Enabled", "P0")
    assert (f["pci/pci_gpu_link_info/pcie_gen/current_link_gen"], f["pci/pci_gpu_link_info/pcie_gen/max_link_gen"],
            f["pci/pci_gpu_link_info/link_widths/current_link_width"]) == ("5", "5", "16x")
    assert f["pci/pci_gpu_link_info/pcie_gen/max_host_link_gen"] == "N/A"  # real: a VM does not see the host port
    assert f["ecc_mode/current_ecc"] == "Enabled"
    assert f["ecc_errors/volatile/dram_uncorrectable"] == "0"
    assert f["ecc_errors/aggregate/sram_uncorrectable_secded"] == "0"
    assert f["remapped_rows/remapped_row_pending"] == "No" and f["remapped_rows/remapped_row_failure"] == "No"
    assert f["retired_pages/pending_retirement"] == "N/A"  # H200 remaps rows; it does not retire pages
    assert f["clocks_event_reasons/clocks_event_reason_hw_thermal_slowdown"] == "Not Active"
    assert f["clocks_event_reasons/clocks_event_reason_gpu_idle"] == "Active"
    assert f["temperature/gpu_temp"] == "32 C"
    assert not any(p.startswith("supported_clocks") for p in f)  # only the health subtrees are kept


def test_older_driver_names_clocks_throttle_reasons():
    xml = ('<nvidia_smi_log><gpu id="00000000:3B:00.0"><clocks_throttle_reasons>'
           "<clocks_throttle_reason_hw_slowdown>Active</clocks_throttle_reason_hw_slowdown>"
           "</clocks_throttle_reasons></gpu></nvidia_smi_log>")
    fields = parse_gpu_health_xml(xml)[0].fields
    assert fields == {"clocks_throttle_reasons/clocks_throttle_reason_hw_slowdown": "Active"}


@pytest.mark.parametrize("text, why", [("NVIDIA-SMI has failed because it couldn't communicate", "not XML"),
                                       ("<other/>", "root element")])
def test_not_nvidia_smi_xml_is_a_parse_error(text, why):
    with pytest.raises(ParseError, match=why):
        parse_gpu_health_xml(text)


@pytest.mark.parametrize("value, reported", [("0", True), ("No", True), ("N/A", False), ("[N/A]", False),
                                             ("Not Supported", False), ("[Not Supported]", False), (None, False),
                                             ("", False)])
def test_na_and_not_supported_are_not_reported(value, reported):
    assert is_reported(value) is reported


def test_xid_lines_old_and_new_formats():
    log = "\n".join([
        "Nov 30 02:11:04 kpro6 kernel: Linux version 6.14.8-2-pve (build@proxmox) #1 SMP",
        "Nov 30 03:40:17 kpro6 kernel: NVRM: Xid (PCI:0000:21:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.",
        "[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error (DBE) has been detected.",
        "[ 1235.0] NVRM: GPU at PCI:0000:3b:00: GPU-1234",  # NVRM, but no Xid
        "[ 1236.0] NVRM: Xid (PCI:000f:01:00): 119, pid=2211, name=python3, Timeout after 6s of waiting for RPC",
    ])
    xids = parse_xid_lines(log)
    assert [(x.code, x.device) for x in xids] == [(79, "PCI:0000:21:00"), (48, "PCI:0000:3b:00"),
                                                  (119, "PCI:000f:01:00")]
    assert xids[0].meaning == "GPU has fallen off the bus" and xids[0].line.endswith("fallen off the bus.")
    assert has_boot_banner(log) and not has_boot_banner("NVRM: loading NVIDIA UNIX Open Kernel Module")


def test_clocks_query_rows_use_the_xml_paths():
    from llmval.parsers.gpu_health import parse_clocks_query

    rows = parse_clocks_query("00000000:00:06.0, Not Active, Active, Active, Not Active, Not Active, Not Active\n")
    assert rows[0].bus_id == "0000:00:06.0"
    assert rows[0].fields["clocks_event_reasons/clocks_event_reason_hw_thermal_slowdown"] == "Active"
    with pytest.raises(ParseError, match="expected 7 columns"):
        parse_clocks_query("Field \"clocks_event_reasons.sync_boost\" is not a valid field to query.\n")
