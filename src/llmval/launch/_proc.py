"""What /proc says about processes and sockets: live processes, process groups, the launch tag, listeners.

Standard library only: the launch watchdog (`_watchdog.py`) runs this module as a plain script beside it,
without importing the package, so that waiting costs one small interpreter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

LAUNCH_ID_ENV = "LLMVAL_LAUNCH_ID"


@dataclass(frozen=True)
class ProcessInfo:
    """A live (non-zombie) process seen in /proc."""

    pid: int
    pgid: int
    cmdline: str

    def __str__(self) -> str:
        return f"pid {self.pid} (pgid {self.pgid}): {self.cmdline[:160]}"


def live_process(pid: int) -> ProcessInfo | None:
    """Process `pid` as /proc shows it, or None when it has ended (gone, or a zombie no one reaped yet: in a
    container PID 1 may not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
    state, pgid = fields[0], int(fields[2])
    if state in {"Z", "X"}:
        return None
    return ProcessInfo(pid, pgid, cmdline)


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def group_members(pgid: int) -> list[ProcessInfo]:
    """Live processes of process group `pgid` (zombies waiting to be reaped do not count)."""
    return [info for pid in _pids() if (info := live_process(pid)) is not None and info.pgid == pgid]


def tagged_processes(launch_id: str) -> list[ProcessInfo]:
    """Live processes whose environment carries `LLMVAL_LAUNCH_ID=launch_id` (ours, wherever they went)."""
    needle = f"{LAUNCH_ID_ENV}={launch_id}".encode()
    found = []
    for pid in _pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and (info := live_process(pid)) is not None:
            found.append(info)
    return found


def launch_id_of(pid: int) -> str | None:
    """The `LLMVAL_LAUNCH_ID` a process carries (it was started by some --launch run), else None."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = f"{LAUNCH_ID_ENV}=".encode()
    found = next((item for item in environ.split(b"\0") if item.startswith(prefix)), None)
    return found[len(prefix):].decode("utf-8", "replace") if found else None


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def listeners(port: int) -> list[ProcessInfo]:
    """Local processes listening on TCP `port` (those this user may inspect)."""
    wanted = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    found = []
    for pid in _pids() if wanted else []:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                    if (info := live_process(pid)) is not None:
                        found.append(info)
                    break
            except OSError:
                continue
    return found
