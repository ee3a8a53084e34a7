"""nvidia-smi: the CSV `--query-gpu` form and the `-q -x` XML form.

Use machine formats only (never the human table, which truncates names).

    >>> gpus = parse_nvidia_smi_query("0, NVIDIA GB10, GPU-1, 0000000F:01:00.0, 580.95.05, 12.1, [N/A]\\n")
    >>> gpus[0].compute_cap, gpus[0].memory_total_mib
    ('12.1', None)
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass

from ..core.errors import ParseError

GPU_QUERY_FIELDS = ("index", "name", "uuid", "pci.bus_id", "driver_version", "compute_cap", "memory.total")
"""Field order of the query we send (the one recorded on the real H200 host). A comma inside a name
cannot shift the other columns: surplus cells are joined back into `name`."""
NOT_AVAILABLE = frozenset({"[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]"})
BUS_ID_RE = re.compile(r"^(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})"
                       r"\.(?P<fn>[0-7])$")
MIB_RE = re.compile(r"^(?P<n>\d+)(?:\s*MiB)?$")


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as nvidia-smi reports it."""

    index: int
    name: str
    uuid: str
    bus_id: str
    """Normalized PCI address, `0000:01:00.0` (see `normalize_bus_id`)."""
    driver_version: str
    compute_cap: str | None
    memory_total_mib: int | None
    """None where nvidia-smi says [N/A] (GB10 unified memory)."""


@dataclass(frozen=True)
class SmiLog:
    """The header facts and per-GPU facts of `nvidia-smi -q -x`."""

    driver_version: str
    cuda_version: str | None
    attached_gpus: int
    gpus: tuple[XmlGpu, ...]


@dataclass(frozen=True)
class XmlGpu:
    bus_id: str
    name: str
    uuid: str
    minor_number: int | None
    architecture: str | None
    memory_total_mib: int | None
    process_pids: tuple[int, ...]
    process_memory: tuple[tuple[int, int | None, str], ...] = ()
    """(pid, used MiB or None where `[N/A]`, process name) of each `<process_info>`: the GPU memory per process
    where `--query-compute-apps` was not read (a recording made before that read)."""


def normalize_bus_id(text: str) -> str:
    """One spelling for a PCI address: nvidia-smi `00000000:01:00.0`, lspci `0000:01:00.0` and Proxmox
    `01:00.0` all become `0000:01:00.0` (lower case, 4-digit domain; GB10's `0000000F` → `000f`).

    >>> normalize_bus_id("0000000F:01:00.0"), normalize_bus_id("01:00.0")
    ('000f:01:00.0', '0000:01:00.0')
    """
    match = BUS_ID_RE.match(text.strip())
    if match is None:
        raise ParseError("PCI bus id", "not domain:bus:device.function", text)
    domain = int(match["domain"] or "0", 16)
    return f"{domain:04x}:{match['bus'].lower()}:{match['dev'].lower()}.{match['fn']}"


def _mib(value: str, source: str) -> int | None:
    value = value.strip()
    if value in NOT_AVAILABLE:
        return None
    match = MIB_RE.match(value)
    if match is None:
        raise ParseError(source, "memory is neither a MiB count nor [N/A]", value)
    return int(match["n"])


def csv_cells(text: str, maxsplit: int = -1) -> Iterator[tuple[str, list[str]]]:
    """(line, its cells stripped) for every non-blank line of an nvidia-smi `--format=csv,noheader` answer; with
    `maxsplit`, the last cell keeps its commas (a process name)."""
    for line in text.splitlines():
        if line.strip():
            yield line, [cell.strip() for cell in line.split(",", maxsplit)]


MAX_XML_DEPTH = 32
"""The deepest element read of `nvidia-smi -q -x` (its own output nests 5 deep: `gpu/ecc_errors/volatile/sram_*`);
past it, the walks over its subtrees (`parsers.gpu_health`) would recurse without end."""
_XML_CHUNK = 1 << 16


def smi_xml_root(text: str, source: str) -> ET.Element:
    """The `<nvidia_smi_log>` element of an `nvidia-smi -q -x` answer; ParseError naming `source` otherwise:
    also for an entity declaration (nvidia-smi declares none; a billion-laughs entity would expand to gigabytes)
    and for elements nested past `MAX_XML_DEPTH`, found while it is parsed (100,000 levels refused in one chunk)."""
    if "<!ENTITY" in text:
        raise ParseError(source, "declares XML entities (nvidia-smi's XML declares none): refused, not expanded",
                         text[:200])
    body = re.sub(r"<!DOCTYPE[^>]*>", "", text, count=1)  # ElementTree does not fetch DTDs; drop the line
    parser = ET.XMLPullParser(events=("start", "end"))
    root: ET.Element | None = None
    depth = 0
    try:
        for start in range(0, len(body), _XML_CHUNK):
            parser.feed(body[start:start + _XML_CHUNK])
            for event, element in parser.read_events():
                if event == "end":
                    depth -= 1
                    continue
                root = element if root is None else root
                depth += 1
                if depth > MAX_XML_DEPTH:
                    raise ParseError(source, f"elements nested over {MAX_XML_DEPTH} deep (refused, not read)",
                                     text[:200])
        parser.close()
    except ET.ParseError as error:
        raise ParseError(source, f"not XML ({error})", text[:200]) from None
    if root is None:
        raise ParseError(source, "not XML (no element)", text[:200])
    if root.tag != "nvidia_smi_log":
        raise ParseError(source, f"root element is <{root.tag}>, not <nvidia_smi_log>", text[:200])
    return root


def parse_nvidia_smi_query(text: str, fields: tuple[str, ...] = GPU_QUERY_FIELDS) -> list[GpuInfo]:
    """Rows of `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`.

    `fields` gives the column order; `name` may be last and then keeps any commas it contains.
    An empty output is an empty list (no GPU), not an error. An answer that was cut is a ParseError, never
    fewer GPUs: nvidia-smi ends every row with a newline and numbers the GPUs it lists 0..n-1, so a last row
    without its newline, or missing indices, mean rows were lost on the way (a cut exactly after a row's
    newline that keeps the rows from 0 cannot be told from a host with fewer GPUs).
    """
    source = "nvidia-smi --query-gpu CSV"
    required = {"index", "uuid", "pci.bus_id", "driver_version", "name"}
    if missing := required - set(fields):
        raise ParseError(source, f"query lacks fields {sorted(missing)}")
    gpus = []
    for line, cells in csv_cells(text):
        if line.startswith(("NVIDIA-SMI has failed", "No devices were found")):
            raise ParseError(source, "nvidia-smi cannot talk to the driver", line)
        if len(cells) > len(fields):  # a name with commas: give the surplus back to it
            at, extra = fields.index("name"), len(cells) - len(fields)
            cells[at:at + extra + 1] = [", ".join(cells[at:at + extra + 1])]
        if len(cells) != len(fields):
            raise ParseError(source, f"expected {len(fields)} columns ({', '.join(fields)}), got {len(cells)}", line)
        row = dict(zip(fields, cells, strict=True))
        if not row["index"].isdigit():
            raise ParseError(source, "index is not a number (is this the header form?)", line)
        cap = row.get("compute_cap")
        gpus.append(GpuInfo(
            index=int(row["index"]), name=row["name"], uuid=row["uuid"], bus_id=normalize_bus_id(row["pci.bus_id"]),
            driver_version=row["driver_version"], compute_cap=None if cap is None or cap in NOT_AVAILABLE else cap,
            memory_total_mib=_mib(row["memory.total"], source) if "memory.total" in row else None,
        ))
    if gpus and not text.endswith("\n"):
        raise ParseError(source, f"the answer was cut: its last row (GPU {gpus[-1].index}) has no newline, so rows "
                         f"after it may be lost; {len(gpus)} GPU(s) read", text.splitlines()[-1])
    if (indices := sorted(g.index for g in gpus)) != list(range(len(gpus))):
        raise ParseError(source, f"rows are missing: nvidia-smi numbers its GPUs 0..n-1, the answer has indices "
                         f"{indices} (cut or merged output)", text[:200])
    return gpus


def _text(node: ET.Element, path: str) -> str | None:
    found = node.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip()


def parse_nvidia_smi_xml(text: str) -> SmiLog:
    """`nvidia-smi -q -x`: driver and CUDA version, and per GPU its bus id, minor number and processes."""
    source = "nvidia-smi -q -x"
    root = smi_xml_root(text, source)
    driver = _text(root, "driver_version")
    if not driver:
        raise ParseError(source, "no <driver_version>", text[:200])
    cuda = _text(root, "cuda_version")
    gpus = []
    for gpu in root.findall("gpu"):
        minor = _text(gpu, "minor_number")
        infos = [pi for pi in gpu.findall("processes/process_info") if (_text(pi, "pid") or "").isdigit()]
        pids = tuple(int(_text(pi, "pid") or 0) for pi in infos)
        memory_of = tuple((int(_text(pi, "pid") or 0), _mib(_text(pi, "used_memory") or "[N/A]", source),
                           _text(pi, "process_name") or "") for pi in infos)
        memory = _text(gpu, "fb_memory_usage/total")
        gpus.append(XmlGpu(
            bus_id=normalize_bus_id(gpu.get("id", "")), name=_text(gpu, "product_name") or "",
            uuid=_text(gpu, "uuid") or "", minor_number=int(minor) if minor and minor.isdigit() else None,
            architecture=_text(gpu, "product_architecture"),
            memory_total_mib=None if memory is None else _mib(memory, source), process_pids=pids,
            process_memory=memory_of,
        ))
    attached = _text(root, "attached_gpus") or str(len(gpus))
    return SmiLog(driver_version=driver, cuda_version=None if cuda in NOT_AVAILABLE else cuda,
                  attached_gpus=int(attached), gpus=tuple(gpus))


ANSI_ESCAPE_RE = re.compile(r"\x1b\[[0-9;]*m")
"""nvidia-smi topo puts underline escapes in its header even when stdout is not a terminal (real H200 capture)."""
P2P_STATUSES = frozenset({"X", "OK", "CNS", "GNS", "TNS", "NS", "DR", "U"})
"""The legend of `nvidia-smi topo -p2p`; `DR` = "Disabled by regkey" (driver 610's legend adds it)."""


def parse_nvidia_smi_topo_p2p(text: str) -> dict[tuple[str, str], str]:
    """`nvidia-smi topo -p2p r` (or w, n, a, p): (GPUi, GPUj) → status (OK, CNS, GNS, TNS, NS, DR, U) for i != j.

    >>> parse_nvidia_smi_topo_p2p(" \\tGPU0\\tGPU1\\t\\n GPU0\\tX\\tNS\\t\\n GPU1\\tNS\\tX\\t\\n")
    {('GPU0', 'GPU1'): 'NS', ('GPU1', 'GPU0'): 'NS'}
    """
    rows = [ANSI_ESCAPE_RE.sub("", line).split() for line in text.splitlines()]
    header_index = next((i for i, cells in enumerate(rows) if cells and all(c.startswith("GPU") for c in cells)), None)
    if header_index is None:
        raise ParseError("nvidia-smi topo -p2p", "no header row of GPU names", text[:200])
    columns = rows[header_index]
    matrix: dict[tuple[str, str], str] = {}
    for cells in rows[header_index + 1:]:
        if not cells or not cells[0].startswith("GPU"):
            break
        row, statuses = cells[0], cells[1:]
        if len(statuses) != len(columns) or not set(statuses) <= P2P_STATUSES:
            raise ParseError("nvidia-smi topo -p2p", f"row {row} does not match the header {columns}",
                             " ".join(cells))
        matrix.update({(row, col): status for col, status in zip(columns, statuses, strict=True) if col != row})
    if not matrix and len(columns) > 1:
        raise ParseError("nvidia-smi topo -p2p", "header without rows", text[:200])
    return matrix
