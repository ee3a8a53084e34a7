"""GPU health as the driver reports it: the health fields of `nvidia-smi -q -x`, and Xid lines of the kernel log.

`parse_gpu_health_xml` keeps, per GPU, the leaf elements of the subtrees that carry health (PCIe link, ECC
mode and counters, retired pages, remapped rows, clocks event reasons, temperature, persistence mode and
performance state) as `path -> text`, so a verdict can quote the element and its value exactly as nvidia-smi
wrote them (`pci/pci_gpu_link_info/pcie_gen/current_link_gen=3`). `[N/A]`/`Not Supported` stay as they are:
whether that is "not reported" is the judge's business (`llmval.gpu.health`).

    >>> xml = ('<nvidia_smi_log><gpu id="00000000:01:00.0"><persistence_mode>Enabled</persistence_mode>'
    ...        '<remapped_rows><remapped_row_pending>No</remapped_row_pending></remapped_rows></gpu></nvidia_smi_log>')
    >>> gpu = parse_gpu_health_xml(xml)[0]
    >>> gpu.bus_id, gpu.fields["remapped_rows/remapped_row_pending"], gpu.fields["persistence_mode"]
    ('0000:01:00.0', 'No', 'Enabled')
    >>> parse_xid_lines("[ 12.5] NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', GPU has fallen off the bus.")[0].code
    79
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from ..core.errors import ParseError
from .nvidia_smi import NOT_AVAILABLE, SmiLog, XmlGpu, _mib, csv_cells, normalize_bus_id, smi_xml_root

HEALTH_SUBTREES = ("persistence_mode", "performance_state", "pci/pci_gpu_link_info", "ecc_mode", "ecc_errors",
                   "retired_pages", "remapped_rows", "clocks_event_reasons", "clocks_throttle_reasons", "temperature")
"""Where the health fields live under each `<gpu>` (`clocks_throttle_reasons` is the name before driver 535)."""
NOT_REPORTED_VALUES = NOT_AVAILABLE | {"N/A (not supported)", "Unknown"}
"""Values that mean the GPU does not report the field (GB10 reports many fields so)."""


@dataclass(frozen=True)
class GpuHealth:
    """The health fields of one GPU: XML path (relative to `<gpu>`) -> text, as nvidia-smi printed it."""

    bus_id: str
    name: str
    fields: dict[str, str]
    uuid: str = ""
    """`GPU-...` as nvidia-smi -q -x writes it (the card's identity: its aggregate ECC counts travel with it)."""

    def get(self, path: str) -> str | None:
        """The text of `path`, or None when the element is absent."""
        return self.fields.get(path)

    def quote(self, path: str) -> str:
        """`path=value` for a verdict (`<absent>` when the driver did not write the element)."""
        return f"{path}={self.fields.get(path, '<absent>')}"


def is_reported(value: str | None) -> bool:
    """False for an absent element and for `[N/A]`, `N/A`, `[Not Supported]`, `Not Supported`."""
    return value is not None and value.strip() not in NOT_REPORTED_VALUES and value.strip() != ""


def _leaves(node: ET.Element, prefix: str, out: dict[str, str]) -> None:
    children = list(node)
    if not children:
        out[prefix] = (node.text or "").strip()
        return
    for child in children:
        _leaves(child, f"{prefix}/{child.tag}", out)


def parse_gpu_health_xml(text: str) -> list[GpuHealth]:
    """Health fields of every GPU in `nvidia-smi -q -x` (also the `-d PERFORMANCE` form, which has fewer)."""
    source = "nvidia-smi -q -x"
    root = smi_xml_root(text, source)
    gpus = []
    for gpu in root.findall("gpu"):
        fields: dict[str, str] = {}
        for path in HEALTH_SUBTREES:
            node = gpu.find(path)
            if node is not None:
                _leaves(node, path, fields)
        name, uuid = gpu.find("product_name"), gpu.find("uuid")
        gpus.append(GpuHealth(bus_id=normalize_bus_id(gpu.get("id", "")),
                              name="" if name is None or name.text is None else name.text.strip(), fields=fields,
                              uuid="" if uuid is None or uuid.text is None else uuid.text.strip()))
    return gpus


CLOCK_REASONS = ("sw_power_cap", "hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                 "sw_thermal_slowdown", "sync_boost")
CLOCKS_QUERY_FIELDS = ("pci.bus_id", *(f"clocks_event_reasons.{r}" for r in CLOCK_REASONS))
"""The second clocks sample: `nvidia-smi --query-gpu=<these> --format=csv,noheader` (driver 580 refuses `-d`
together with `-x`: "--display/-d flags can not be combined with -x/--xml-format flags", real H200)."""


def parse_clocks_query(text: str) -> list[GpuHealth]:
    """Rows of the clocks-event query, as GpuHealth whose fields use the XML's paths
    (`clocks_event_reasons/clocks_event_reason_hw_slowdown`), so both samples are judged and quoted alike."""
    source = "nvidia-smi --query-gpu=clocks_event_reasons"
    gpus = []
    for line, cells in csv_cells(text):
        if len(cells) != len(CLOCKS_QUERY_FIELDS):
            raise ParseError(source, f"expected {len(CLOCKS_QUERY_FIELDS)} columns, got {len(cells)}", line)
        fields = {f"clocks_event_reasons/clocks_event_reason_{reason}": value
                  for reason, value in zip(CLOCK_REASONS, cells[1:], strict=True)}
        gpus.append(GpuHealth(bus_id=normalize_bus_id(cells[0]), name="", fields=fields))
    return gpus


XID_RE = re.compile(r"NVRM: Xid \((?P<device>[^)]*)\): (?P<code>\d+)(?:,\s*(?P<detail>.*))?")
"""`NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.` (the
driver's format; older drivers leave out pid and name)."""
OFF_BUS_RE = re.compile(r"NVRM: GPU (?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?: "
                        r"GPU has fallen off the bus")
"""`NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.`: the driver's own line, which can come without any Xid line
(the same words as Xid 79)."""
LOST_HEAD_RE = re.compile(r"NVRM: The NVIDIA GPU (?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)")
LOST_PCI_ID_RE = re.compile(r"\(PCI ID: (?P<pci_id>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})\)")
LOST_TAIL_RE = re.compile(r"fallen off the bus and is not responding to commands")
"""The driver's multi-line form (the open kernel modules' nv.c, when the GPU's registers read all ones, often at
probe time, with no Xid line): one printk of three lines, which dmesg shows with its continuation lines indented
and a line-by-line grep cuts apart:

    [ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
                   NVRM: (PCI ID: 10de:26b5) installed in this system has
                   NVRM: fallen off the bus and is not responding to commands.

Some drivers print the PCI ID on the first line (`NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2d04) installed in
this system has`), and a log that joins the record shows it on one line."""
LOST_LINES = 3
"""How many lines the multi-line form spans at most: a tail looks that far back for its head."""
GSP_TIMEOUT_RE = re.compile(r"NVRM: .*(?:rpcRecvPoll timedout for fn (?P<fn>\d+)|\bGSP Timeout\b|"
                            r"GSP\b.*\b[Hh]eartbeat\b.*(?:timed? ?out|timeout)|[Hh]eartbeat\b.*\bGSP\b.*time)")
"""The GPU's firmware (GSP) not answering, as the driver says it beside or instead of an Xid 119 line (open
kernel modules' kernel_gsp.c / rpc.c): the `_kgspLogXid119: *** GSP Timeout ***` banner, `_issueRpcAndWait:
rpcRecvPoll timedout for fn 76!` (later timeouts, after the first Xid 119 was printed or when it was cut by a grep),
and GSP heartbeat timeouts. Counted as Xid 119 where no Xid 119 line was printed."""
GSP_GPU_RE = re.compile(r"\bGPU(?P<n>\d+)\b")
BOOT_BANNER_RE = re.compile(r"\bLinux version \d")
"""The kernel's first line of every boot: where it shows, the log reaches back to boot."""

XID_MEANINGS = {
    13: "graphics engine exception (usually the application)", 31: "GPU memory page fault (usually the application)",
    38: "driver firmware error", 109: "context switch timeout (CTXSW)",
    145: "NVLink RLW error (an NVLink link or fabric error)",
    149: "NVLink NETIR link event (a link down: NVLink fabric)",
    43: "GPU stopped processing (application fault)", 45: "preemptive cleanup after an earlier error",
    48: "double-bit ECC error", 61: "internal micro-controller breakpoint", 62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recorded", 64: "ECC page retirement or row remapper failure",
    68: "video processor exception", 69: "graphics engine class error", 74: "NVLink error",
    79: "GPU has fallen off the bus", 92: "high single-bit ECC error rate", 94: "contained ECC error",
    95: "uncontained ECC error", 119: "GSP RPC timeout", 120: "GSP error", 154: "GPU recovery action changed",
}
"""Xid codes operators meet most (NVIDIA's Xid catalogue); the hint of `hosts.gpu.health.xid` quotes them."""


@dataclass(frozen=True)
class XidEvent:
    """One Xid line of the kernel log."""

    code: int
    device: str
    """As the driver wrote it, e.g. `PCI:0000:01:00`."""
    line: str
    xid_line: bool = True
    """False for a `GPU has fallen off the bus` line with no Xid line of its GPU (counted as code 79), or a GSP
    timeout line with no Xid 119 line in the log (counted as code 119)."""
    pci_id: str = ""
    """The multi-line form's `vendor:device` (`10de:26b5`), where the log kept it."""

    @property
    def meaning(self) -> str:
        return XID_MEANINGS.get(self.code, "see NVIDIA's Xid catalogue")


def parse_xid_lines(text: str) -> list[XidEvent]:
    """Every `NVRM: Xid (...): N, ...` line, in order, and every off-the-bus message of a GPU that has no Xid 79
    line, as code 79 with `xid_line=False`: the one-line `NVRM: GPU <bus>: GPU has fallen off the bus` and the
    multi-line `NVRM: The NVIDIA GPU <bus>` ... `fallen off the bus and is not responding to commands` (its lines
    joined with " / "; a tail whose head the log lost is still an event, of an unnamed GPU). Other lines are ignored.

    >>> [(e.code, e.xid_line) for e in parse_xid_lines("[ 9.1] NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.")]
    [(79, False)]
    >>> lost = parse_xid_lines("NVRM: The NVIDIA GPU 0000:b3:00.0\\n NVRM: (PCI ID: 10de:26b5) installed in this "
    ...                        "system has\\n NVRM: fallen off the bus and is not responding to commands.")
    >>> [(e.code, e.device, e.pci_id) for e in lost]
    [(79, 'PCI:0000:b3:00.0', '10de:26b5')]
    """
    events, off_bus, gsp = [], [], []
    lines = [line.strip() for line in text.splitlines()]
    for at, line in enumerate(lines):
        if match := XID_RE.search(line):
            events.append(XidEvent(int(match["code"]), match["device"], line))
        elif match := OFF_BUS_RE.search(line):
            off_bus.append(XidEvent(79, f"PCI:{match['bus']}", line, xid_line=False))
        elif LOST_TAIL_RE.search(line):
            off_bus.append(_lost_gpu(lines[max(0, at - LOST_LINES + 1):at + 1]))
        elif GSP_TIMEOUT_RE.search(line):
            gpu = GSP_GPU_RE.search(line.split("NVRM:", 1)[1])
            gsp.append(XidEvent(119, f"GPU{gpu['n']}" if gpu else "", line, xid_line=False))
    with_xid = {_gpu_key(e.device) for e in events if e.code == 79}
    gsp = [] if any(e.code == 119 for e in events) else gsp  # the Xid 119 line says it; these are its details
    return events + [e for e in off_bus if not e.device or _gpu_key(e.device) not in with_xid] + gsp


def _lost_gpu(window: list[str]) -> XidEvent:
    """The multi-line off-the-bus message ending `window`: from its head (`NVRM: The NVIDIA GPU <bus>`) on."""
    head = next((i for i in range(len(window) - 1, -1, -1) if LOST_HEAD_RE.search(window[i])), None)
    message = window[head:] if head is not None else window[-1:]
    bus = LOST_HEAD_RE.search(message[0]) if head is not None else None
    pci_id = next((m["pci_id"] for m in map(LOST_PCI_ID_RE.search, message) if m), "")
    return XidEvent(79, f"PCI:{bus['bus']}" if bus else "", " / ".join(message), xid_line=False, pci_id=pci_id)


def _gpu_key(device: str) -> str:
    """One spelling of a GPU's PCI address for matching an Xid line (`PCI:0000:05:00`) with an off-bus message
    (`PCI:0000:05:00.0`): domain widths differ, so the bus:device part and the domain's last digit."""
    return re.sub(r"\.\d$", "", device.lower().removeprefix("pci:"))[-7:]


def has_boot_banner(text: str) -> bool:
    """True when the kernel log text holds this boot's `Linux version ...` line."""
    return BOOT_BANNER_RE.search(text) is not None


# ---- `nvidia-smi -q` (text), where `-q -x` is not available ----------------------------------------------------------
SMI_TEXT_GPU_RE = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")
SMI_TEXT_ROW_RE = re.compile(r"^(?P<indent> *)(?P<key>\S.*?)\s*(?::\s*(?P<value>.*?))?\s*$")
TEXT_HEALTH_PATHS = {
    "persistence mode": "persistence_mode",
    "performance state": "performance_state",
    "pci/gpu link info/pcie generation/max": "pci/pci_gpu_link_info/pcie_gen/max_link_gen",
    "pci/gpu link info/pcie generation/current": "pci/pci_gpu_link_info/pcie_gen/current_link_gen",
    "pci/gpu link info/pcie generation/device current": "pci/pci_gpu_link_info/pcie_gen/device_current_link_gen",
    "pci/gpu link info/pcie generation/device max": "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen",
    "pci/gpu link info/pcie generation/host max": "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen",
    "pci/gpu link info/link width/max": "pci/pci_gpu_link_info/link_widths/max_link_width",
    "pci/gpu link info/link width/current": "pci/pci_gpu_link_info/link_widths/current_link_width",
    "ecc mode/current": "ecc_mode/current_ecc",
    "ecc mode/pending": "ecc_mode/pending_ecc",
    "retired pages/double bit ecc": "retired_pages/double_bit_retirement/retired_count",
    "retired pages/single bit ecc": "retired_pages/multiple_single_bit_retirement/retired_count",
    "retired pages/pending page blacklist": "retired_pages/pending_blacklist",
    "retired pages/pending page retirement": "retired_pages/pending_retirement",
    "remapped rows/correctable error": "remapped_rows/remapped_row_corr",
    "remapped rows/inactive correctable error": "remapped_rows/remapped_row_corr_inactive",
    "remapped rows/uncorrectable error": "remapped_rows/remapped_row_unc",
    "remapped rows/inactive uncorrectable error": "remapped_rows/remapped_row_unc_inactive",
    "remapped rows/pending": "remapped_rows/remapped_row_pending",
    "remapped rows/remapping failure occurred": "remapped_rows/remapped_row_failure",
    "temperature/gpu current temp": "temperature/gpu_temp",
    "temperature/memory current temp": "temperature/memory_temp",
}
"""`nvidia-smi -q`'s labels (nested by indentation, lower case) -> the `-q -x` element paths the judges read, where the
names differ; ECC counters follow one rule (`ecc errors/volatile/DRAM Uncorrectable` -> `ecc_errors/volatile/
dram_uncorrectable`) and clocks event reasons another (`Idle` -> `clocks_event_reason_gpu_idle`). Checked against the
REAL H200 pair of `-q` and `-q -x` (selftest/data/real/h200x2)."""
CLOCK_TEXT_NAMES = {"idle": "gpu_idle", "display clock setting": "display_clocks_setting",
                    "hw slowdown/hw thermal slowdown": "hw_thermal_slowdown",
                    "hw slowdown/hw power brake slowdown": "hw_power_brake_slowdown"}


def _snake(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower().replace("-", "")).strip("_")


def _text_tree(block: list[str]) -> dict[str, str]:
    """One GPU's `-q` block as `parent/child/label -> value` (labels lower case, nested by indentation)."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in block:
        m = SMI_TEXT_ROW_RE.match(line)
        if m is None or not m["key"]:
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = m["key"].strip().lower()
        path = "/".join([s[1] for s in stack] + [key])
        if m["value"] is None or m["value"] == "":
            stack.append((indent, key))
        else:
            out[path] = m["value"].strip()
    return out


def _text_health_path(path: str) -> str | None:
    """The `-q -x` path of one `-q` label path, or None where the judges read no such field."""
    if path in TEXT_HEALTH_PATHS:
        return TEXT_HEALTH_PATHS[path]
    for section, element in (("clocks event reasons/", "clocks_event_reasons/clocks_event_reason_"),
                             ("clocks throttle reasons/", "clocks_throttle_reasons/clocks_throttle_reason_")):
        if path.startswith(section):
            rest = path[len(section):]
            return element + CLOCK_TEXT_NAMES.get(rest, _snake(rest.rsplit("/", 1)[-1]))
    if path.startswith("ecc errors/"):
        return "ecc_errors/" + "/".join(_snake(part) for part in path.split("/")[1:])
    return None


def smi_text_blocks(text: str) -> list[tuple[str, dict[str, str], list[str]]]:
    """(bus id, label tree, lines) of every `GPU <bus>` block of `nvidia-smi -q`, after its header rows (`""` as the
    bus id: the header, `Driver Version`, `CUDA Version`, `Attached GPUs`)."""
    blocks: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        if m := SMI_TEXT_GPU_RE.match(line.strip()):
            blocks.append((normalize_bus_id(m["bus"]), []))
        elif not line.startswith("=") and line.strip():
            blocks[-1][1].append(line)
    if len(blocks) == 1:
        raise ParseError("nvidia-smi -q", "no `GPU <bus id>` block", text[:200])
    return [(bus, _text_tree(lines), lines) for bus, lines in blocks]


def parse_gpu_health_text(text: str) -> list[GpuHealth]:
    """The health fields of `nvidia-smi -q` (text) under the `-q -x` paths, so one judge and one quote serve both.

    >>> gpu = parse_gpu_health_text("Driver Version : 580.1\\nGPU 00000000:01:00.0\\n    Product Name : NVIDIA GB10\\n"
    ...                             "    Persistence Mode : Enabled\\n    Remapped Rows\\n        Pending : No\\n")[0]
    >>> gpu.bus_id, gpu.name, gpu.fields
    ('0000:01:00.0', 'NVIDIA GB10', {'persistence_mode': 'Enabled', 'remapped_rows/remapped_row_pending': 'No'})
    """
    gpus = []
    for bus, tree, _ in smi_text_blocks(text)[1:]:
        fields = {xml: value for path, value in tree.items() if (xml := _text_health_path(path)) is not None}
        gpus.append(GpuHealth(bus_id=bus, name=tree.get("product name", ""), fields=fields,
                              uuid=tree.get("gpu uuid", "")))
    return gpus


SMI_TEXT_PROCESS_RE = re.compile(r"^\s*Process ID\s*:\s*(?P<pid>\d+)\s*$")
SMI_TEXT_PROCESS_FIELD_RE = re.compile(r"^\s*(?P<key>Name|Used GPU Memory)\s*:\s*(?P<value>.*?)\s*$")


def parse_nvidia_smi_text(text: str) -> SmiLog:
    """`nvidia-smi -q` (text) as the `SmiLog` `-q -x` gives: driver and CUDA versions, and per GPU its bus id, name,
    UUID, minor number, architecture, memory total and processes (with their memory)."""
    source = "nvidia-smi -q"
    blocks = smi_text_blocks(text)
    header = blocks[0][1]
    driver = header.get("driver version")
    if not driver:
        raise ParseError(source, "no `Driver Version`", text[:200])
    gpus = []
    for bus, tree, lines in blocks[1:]:
        processes: list[list] = []
        for line in lines:
            if m := SMI_TEXT_PROCESS_RE.match(line):
                processes.append([int(m["pid"]), None, ""])
            elif processes and (m := SMI_TEXT_PROCESS_FIELD_RE.match(line)):
                if m["key"] == "Name":
                    processes[-1][2] = m["value"]
                else:
                    processes[-1][1] = _mib(m["value"], source)
        minor, memory = tree.get("minor number", ""), tree.get("fb memory usage/total")
        gpus.append(XmlGpu(bus_id=bus, name=tree.get("product name", ""), uuid=tree.get("gpu uuid", ""),
                           minor_number=int(minor) if minor.isdigit() else None,
                           architecture=tree.get("product architecture"),
                           memory_total_mib=None if memory is None else _mib(memory, source),
                           process_pids=tuple(p[0] for p in processes),
                           process_memory=tuple((p[0], p[1], p[2]) for p in processes)))
    cuda = header.get("cuda version")
    attached = header.get("attached gpus") or str(len(gpus))
    return SmiLog(driver_version=driver, cuda_version=None if cuda in NOT_AVAILABLE or cuda == "Not Found" else cuda,
                  attached_gpus=int(attached) if attached.isdigit() else len(gpus), gpus=tuple(gpus))
