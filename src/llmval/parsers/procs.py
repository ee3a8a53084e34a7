"""Processes that hold GPU device nodes: `fuser -v` tables.

`fuser -v /dev/nvidia*` prints PIDs on stdout and the table on stderr (real H200 capture); with
`2>&1` the table holds both. A holder's cgroup (from /proc/PID/cgroup) names its systemd unit.

    >>> GpuHolder(713, "python3", "0::/system.slice/sglang.service").unit
    'sglang.service'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
