"""Small parsers the launch sequence needs: alive Ray nodes, GPU memory in use, an error line in a log.

`ray status` changed its section names over time (`Healthy:` became `Active:` + `Idle:`, Ray 2.8), so
nodes are counted in any of those sections (format: python/ray/autoscaler/_private/util.py).
"""

from __future__ import annotations

import re

from ..core.errors import ParseError

RAY_SECTION_RE = re.compile(r"^(?P<name>[A-Z][A-Za-z ]*):\s*$")
RAY_NODE_LINE_RE = re.compile(r"^\s+(?P<count>\d+)\s+(?P<node>\S+)\s*$")
RAY_ALIVE_SECTIONS = {"Healthy", "Active", "Idle"}
GPU_MEMORY_ROW_RE = re.compile(r"^\s*(?P<index>\d+)\s*,\s*(?:(?P<used>\d+)(?:\s*MiB)?|(?P<na>\[N/A\]|N/A|"
                               r"\[Not Supported\]|Not Supported))\s*$")
"""`index, memory.used` rows, with or without `nounits`; GB10 (unified memory) says `[N/A]` for memory.used."""
ERROR_LINE_RE = re.compile(
    r"(error|exception|traceback|fatal|out of memory|\boom\b|killed|cannot|failed|no such)", re.IGNORECASE
)


def parse_ray_alive_nodes(text: str) -> int:
    """Number of alive nodes listed by `ray status` (Healthy/Active/Idle sections)."""
    if "Node status" not in text:
        raise ParseError("ray status", "no 'Node status' section", text[-300:])
    alive, section = 0, ""
    for line in text.splitlines():
        if m := RAY_SECTION_RE.match(line):
            section = m["name"]
        elif section in RAY_ALIVE_SECTIONS and (m := RAY_NODE_LINE_RE.match(line)):
            alive += int(m["count"])
    return alive


def parse_gpu_memory_used_mib(text: str) -> dict[int, int | None]:
    """`nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits` → {index: MiB or None}.

    None: the GPU does not report memory.used (`[N/A]` on GB10), so memory cannot tell whether it is idle."""
    used: dict[int, int | None] = {}
    for line in text.strip().splitlines():
        m = GPU_MEMORY_ROW_RE.match(line)
        if not m:
            raise ParseError("nvidia-smi index,memory.used", "expected 'index, MiB' rows", line)
        used[int(m["index"])] = None if m["na"] else int(m["used"])
    if not used:
        raise ParseError("nvidia-smi index,memory.used", "no GPU rows", text[-300:])
    return used


# A warning is not the engine's error, even when its text says "error" (Ray's `FutureWarning: Tip: ... turn off
# this error message`, vLLM `WARNING ... failed to ...` notes, Python's `warnings.warn(` echo line).
WARNING_LINE_RE = re.compile(r"\b[A-Z]\w*Warning\b|\bWARN(?:ING)?\b|warnings\.warn\(")


def error_line(log_tail: str) -> str:
    """The last line of a log tail that reads like the engine's own error (not a warning), else ''."""
    for line in reversed(log_tail.splitlines()):
        if ERROR_LINE_RE.search(line) and not WARNING_LINE_RE.search(line):
            return line.strip()
    return ""
