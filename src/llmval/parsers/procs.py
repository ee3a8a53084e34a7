"""Processes that hold GPU device nodes: `fuser -v` tables and our holder listing.

`fuser -v /dev/nvidia*` prints PIDs on stdout and the table on stderr (real H200 capture); with
`2>&1` they interleave. Our `GPU_HOLDERS` command prints one `<pid> <comm> <cgroup line>` per holder.

    >>> parse_gpu_holders("713 python3 0::/system.slice/sglang.service\\n")[0].unit
    'sglang.service'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError

FUSER_ROW_RE = re.compile(r"^(?:(?P<file>/\S+):)?\s+(?P<user>\S+)\s+(?P<pid>\d+)\s+(?P<access>[Fframce.]+)\s+"
                          r"(?P<command>.+)$")
HOLDER_RE = re.compile(r"^(?P<pid>\d+) (?P<comm>.*?)(?: (?P<cgroup>\d+:[^:]*:\S*))?$")
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


def parse_gpu_holders(text: str) -> list[GpuHolder]:
    """Our listing: `<pid> <comm> <0::cgroup>` per line, sorted unique by the command itself."""
    holders: dict[int, GpuHolder] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        match = HOLDER_RE.match(line.strip())
        if match is None:
            raise ParseError("GPU holder listing", "expected `<pid> <comm> [cgroup]`", line)
        holders.setdefault(int(match["pid"]), GpuHolder(int(match["pid"]), match["comm"], match["cgroup"] or ""))
    return list(holders.values())
