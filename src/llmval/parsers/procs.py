"""Processes that hold GPU device nodes or serve a port: `fuser`, `ps`, `nvidia-smi --query-compute-apps`,
`/proc/net/tcp`.

`fuser -v /dev/nvidia*` prints PIDs on stdout and the table on stderr (real H200 capture); with
`2>&1` the table holds both. A holder's cgroup (from /proc/PID/cgroup) names its systemd unit.
The table's COMMAND is the kernel's 15-character `comm` (`VLLM::EngineCor` for vLLM's `VLLM::EngineCore`
process title); `ps -o args` and `nvidia-smi` show the full title (`ProcessRow.args`, `ComputeApp.name`).

    >>> GpuHolder(713, "python3", "0::/system.slice/sglang.service").unit
    'sglang.service'
    >>> parse_ps_rows("   4242       1     133 VLLM::EngineCore")[0].args
    'VLLM::EngineCore'
    >>> parse_listening_ports("0100007F:1F40 0\\n00000000000000000000000000000000:0016 0")
    {8000: [0], 22: [0]}
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import ParseError
from .nvidia_smi import csv_cells

FUSER_ROW_RE = re.compile(r"^(?:(?P<file>/\S+):)?\s+(?P<user>\S+)\s+(?P<pid>\d+)\s+(?P<access>[Fframce.]+)\s+"
                          r"(?P<command>.+)$")
UNIT_RE = re.compile(r"/(?P<unit>[^/]+\.(?:service|scope))(?:/|$)")


@dataclass(frozen=True)
class GpuHolder:
    pid: int
    command: str
    cgroup: str = ""

    @property
    def unit(self) -> str | None:
        """The systemd unit (or docker scope) whose cgroup holds the process, if any."""
        units = UNIT_RE.findall(self.cgroup)
        return units[-1] if units else None


def parse_fuser_verbose(text: str) -> list[GpuHolder]:
    """Holders from `fuser -v FILES 2>&1` (one per pid, first command seen)."""
    holders: dict[int, GpuHolder] = {}
    for line in text.splitlines():
        match = FUSER_ROW_RE.match(line)
        if match is None or match["user"] == "USER":
            continue
        pid = int(match["pid"])
        holders.setdefault(pid, GpuHolder(pid, match["command"].strip()))
    return list(holders.values())


COMM_LEN = 15
"""The kernel keeps a process's `comm` (what fuser, `ps -o comm` and /proc/PID/stat print) to 15 characters."""


def parse_fuser_pids(text: str) -> list[int]:
    """The pids `fuser` prints on stdout (`fuser -n tcp 8000 2>/dev/null` -> ` 14449 14502`), in order."""
    pids = []
    for word in text.split():
        digits = word.rstrip("cefFrm")  # without -v, fuser may append the access letters to each pid
        if not digits.isdigit():
            raise ParseError("fuser (stdout)", "expected process ids", text)
        pids.append(int(digits))
    return list(dict.fromkeys(pids))


@dataclass(frozen=True)
class ProcessRow:
    """One process as `ps -o pid=,ppid=,etimes=,args=` prints it."""

    pid: int
    ppid: int
    age_s: int
    """Seconds since it started (`etimes`)."""
    args: str
    """Its command line, or the title it gave itself (setproctitle: `VLLM::EngineCore`)."""

    @property
    def argv0(self) -> str:
        return self.args.split(" ", 1)[0]


def split_ps_rows(text: str, column: str, *, label: str, missing: str) -> list[tuple[int, int, int, str]]:
    """`ps -o pid=,ppid=,etimes=,<column>=` rows as (pid, ppid, seconds, that column); the last column may hold
    spaces, and `missing` stands in where a row has none (`label` names it in the parse error)."""
    rows = []
    for line in text.splitlines():
        cells = line.split(None, 3)
        if not cells:
            continue
        if len(cells) < 3 or not all(c.isdigit() for c in cells[:3]):
            raise ParseError(f"ps -o pid=,ppid=,etimes=,{column}=", f"expected `pid ppid seconds {label}`", line)
        rows.append((int(cells[0]), int(cells[1]), int(cells[2]), cells[3] if len(cells) > 3 else missing))
    return rows


def parse_ps_rows(text: str) -> list[ProcessRow]:
    """`ps -ww -o pid=,ppid=,etimes=,args= -p ...` rows (args may hold spaces; a process without a command line,
    a kernel thread, has none)."""
    return [ProcessRow(*row) for row in split_ps_rows(text, "args", label="args", missing="")]


@dataclass(frozen=True)
class ComputeApp:
    """One process on one GPU, as `nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid,process_name` says."""

    pid: int
    used_mib: int | None
    """None where nvidia-smi says [N/A] (no per-process accounting, e.g. in some containers)."""
    gpu_uuid: str
    name: str


def parse_compute_apps(text: str) -> list[ComputeApp]:
    """`--query-compute-apps=pid,used_memory,gpu_uuid,process_name --format=csv,noheader,nounits` rows
    (`713, 1634, GPU-f0ec..., python3`; the name is last, so a comma inside it cannot shift the others)."""
    apps = []
    for line, cells in csv_cells(text, maxsplit=3):
        if line.strip().startswith("No running"):
            continue
        if len(cells) != 4 or not cells[0].isdigit():
            raise ParseError("nvidia-smi --query-compute-apps", "expected `pid, used_memory, gpu_uuid, name`", line)
        used = cells[1].removesuffix("MiB").strip()
        apps.append(ComputeApp(int(cells[0]), int(used) if used.isdigit() else None, cells[2], cells[3]))
    return apps


def parse_listening_ports(text: str) -> dict[int, list[int]]:
    """Listening TCP ports and the uids owning their sockets, from `/proc/net/tcp{,6}` rows already cut to
    `local_address uid` (`0100007F:1F40 0`: 127.0.0.1:8000, root)."""
    ports: dict[int, list[int]] = {}
    for line in text.splitlines():
        cells = line.split()
        if not cells:
            continue
        address, _, port = cells[0].rpartition(":")
        if not address or len(cells) < 2 or not cells[1].isdigit():
            raise ParseError("/proc/net/tcp", "expected `local_address uid` (hex address:port, uid)", line)
        try:
            number = int(port, 16)
        except ValueError:
            raise ParseError("/proc/net/tcp", "the port is not hexadecimal", line) from None
        owners = ports.setdefault(number, [])
        if int(cells[1]) not in owners:
            owners.append(int(cells[1]))
    return ports
