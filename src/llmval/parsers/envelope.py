"""Log envelopes: what the tools between a program and the suite wrap around each line it printed.

Every log line the suite reads (engine logs, NCCL's INFO lines, journald, `docker logs`, Ray's forwarding)
passes `unwrap_line`/`unwrap_log` before any parser sees it: the envelope is stripped and kept as facts
(`Envelope`), so each parser reads only what the program itself printed. The envelopes, outermost first:

- journald's `short` / `short-iso` prefix (`Aug 18 19:02:31 sys0 vllm[64835]: `), from `journalctl -u X` without
  `-o cat` (systemd `logs-show.c`); the host is kept as the line's node, the identifier and its pid as facts;
- `docker logs -t`'s RFC 3339 timestamp (`2026-12-06T23:44:05.123456789Z `, moby `daemon/logger`);
- ANSI colour (Ray colours its prefixes and its dedup suffix with colorama; vLLM colours its levels on a TTY);
- process tags, one or more: Ray's `print_worker_logs` (ray/_private/worker.py) writes
  `({actor_name or task_name} pid={pid}, ip={ip})`, without the name before an actor is named (`(pid=N, ip=X)`),
  without `, ip=` on the driver's own node, `(raylet, ip=X)` / `(autoscaler +1m2s)` for its daemons; vLLM prefixes
  its own processes the same way (`(EngineCore_DP0 pid=2301)`, `(APIServer pid=9)`), so a chain such as
  `(EngineCore_DP0 pid=2301) (RayWorkerWrapper pid=2981, ip=169.254.28.198)` is read as one list, outermost first;
- Ray's log deduplication (ray/_private/ray_logging `LogDeduplicator`): the suffix
  `[repeated 15x across cluster]` and, on the first deduplicated line of a run, the notice
  `(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see ... )`.

    >>> e = unwrap_line("\\x1b[2m\\x1b[36m(RayWorkerWrapper pid=285, ip=192.168.177.12)\\x1b[0m NCCL_P2P_DISABLE set "
    ...                 "by environment to 1. \\x1b[32m[repeated 15x across cluster]\\x1b[0m")
    >>> e.message, e.repeated, e.ray_worker.ip
    ('NCCL_P2P_DISABLE set by environment to 1.', 15, '192.168.177.12')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""A CSI escape: colours (`\\x1b[36m`), resets, and the cursor moves of progress bars."""
JOURNAL_PREFIX_RE = re.compile(
    r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d\d:?\d\d) "
    r"(?P<node>[^\s:\[\]]+) (?P<ident>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?: ")
"""journald `short` (`Aug 18 19:02:31 sys0 vllm[64835]: `) and `short-iso` (`2026-12-06T23:44:05+0000 ...`)."""
DOCKER_TIMESTAMP_RE = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")
PROCESS_TAG = (r"\((?:(?P<daemon>raylet|autoscaler|gcs_server|dashboard|monitor)(?: \+[\dhms]+)?|"
               r"(?:(?P<name>[A-Za-z_][\w.:\-]*(?: [A-Za-z_][\w.:\-]*(?:=\w+)?)*) )?pid=(?P<pid>\d+))"
               r"(?:, ip=(?P<ip>[0-9A-Fa-f.:]+))?\)")
"""One process tag: `(Name pid=N, ip=X)`, `(pid=N)`, `(raylet, ip=X)`, `(autoscaler +2m3s)`, and vLLM's own
multi-word ones (`(VllmWorker rank=0 pid=N)`, `(VllmWorker TP0 pid=N)`)."""
PROCESS_TAG_RE = re.compile(PROCESS_TAG + r" ?")
PROCESS_TAGS = r"(?:\((?:[A-Za-z_][\w.:\-]*(?: [A-Za-z_][\w.:\-]*(?:=\w+)?)* )?pid=\d+(?:, ip=[0-9A-Fa-f.:]+)?\) ?)"
"""A process tag without named groups, for patterns that must stop where the next tagged record starts (NCCL)."""
DEDUP_NOTICE_RE = re.compile(r"\s*\(Ray deduplicates logs by default\b.*\)\s*$")
REPEATED_RE = re.compile(r"\s*\[repeated (?P<n>\d+)x across cluster\]\s*$")
RAY_WORKER_ACTORS = frozenset({"RayWorkerWrapper", "RayWorkerProc", "RayWorker", "RayWorkerVllm"})
"""vLLM's GPU-worker actors as Ray names them: `RayWorkerProc` (vLLM 0.2x's executor), `RayWorkerWrapper`
(the older one, the Sparks' vLLM 0.17), `RayWorkerVllm` / `RayWorker` (vLLM 0.2-0.4's)."""


@dataclass(frozen=True)
class ProcessTag:
    """One `(Name pid=N, ip=X)` tag: who printed the line and, under Ray, on which node (`ip`; None = local)."""

    name: str
    """The actor or task name, the daemon (`raylet`), or "" for Ray's unnamed `(pid=N)`."""
    pid: int | None
    ip: str | None

    @property
    def is_ray_worker(self) -> bool:
        return self.name in RAY_WORKER_ACTORS


@dataclass(frozen=True)
class Envelope:
    """One log line with its envelope taken apart."""

    raw: str
    line: str
    """The line as the program printed it, process tags included (what a check quotes): no colour, no journald or
    docker prefix, no Ray dedup suffix or notice."""
    message: str
    """What the program itself said: `line` without its process tags (what every parser reads)."""
    tags: tuple[ProcessTag, ...] = ()
    node: str | None = None
    """The host journald names (None when the line came without a journald prefix)."""
    ident: str | None = None
    ident_pid: int | None = None
    timestamp: str | None = None
    repeated: int | None = None
    """Ray's `[repeated Nx across cluster]`: N more lines like this one on the cluster were folded into it."""
    dedup_notice: bool = False
    coloured: bool = False

    @property
    def ray_worker(self) -> ProcessTag | None:
        """The innermost tag of one of vLLM's Ray GPU workers, if the line came from one."""
        return next((t for t in reversed(self.tags) if t.is_ray_worker), None)

    @property
    def ip(self) -> str | None:
        """The Ray node the line was printed on (the innermost tag naming one), None on the driver's own node."""
        return next((t.ip for t in reversed(self.tags) if t.ip), None)


def take_tags(text: str) -> tuple[tuple[ProcessTag, ...], str]:
    """The leading chain of process tags of `text`, outermost first, and what follows them.

    >>> take_tags("(EngineCore_DP0 pid=2301) (pid=2981, ip=10.0.0.2) INFO x")
    ((ProcessTag(name='EngineCore_DP0', pid=2301, ip=None), ProcessTag(name='', pid=2981, ip='10.0.0.2')), 'INFO x')
    """
    tags: list[ProcessTag] = []
    while m := PROCESS_TAG_RE.match(text):
        tags.append(ProcessTag(m["daemon"] or m["name"] or "", int(m["pid"]) if m["pid"] else None, m["ip"]))
        text = text[m.end():]
    return tuple(tags), text


def unwrap_line(raw: str) -> Envelope:
    """`raw` with every envelope stripped and kept (see the module's opening paragraph for the list)."""
    text = raw.rstrip("\r\n")
    facts: dict = {}
    if m := JOURNAL_PREFIX_RE.match(text):
        facts.update(timestamp=m["ts"], node=m["node"], ident=m["ident"],
                     ident_pid=int(m["pid"]) if m["pid"] else None)
        text = text[m.end():]
    elif m := DOCKER_TIMESTAMP_RE.match(text):
        facts["timestamp"] = m["ts"]
        text = text[m.end():]
    if "\x1b" in text:
        text, colours = ANSI_RE.subn("", text)
        facts["coloured"] = colours > 0
    if "Ray deduplicates" in text and (m := DEDUP_NOTICE_RE.search(text)):
        facts["dedup_notice"] = True
        text = text[:m.start()]
    if "across cluster]" in text and (m := REPEATED_RE.search(text)):
        facts["repeated"] = int(m["n"])
        text = text[:m.start()]
    tags, message = take_tags(text) if text.startswith("(") else ((), text)
    return Envelope(raw, text, message, tags, **facts)


@dataclass(frozen=True)
class UnwrappedLog:
    """A whole log, line by line, its envelopes taken apart."""

    lines: tuple[Envelope, ...]

    @property
    def text(self) -> str:
        """The messages alone, one per line: what a parser of the program's own output reads."""
        return "\n".join(e.message for e in self.lines)

    @property
    def quotable(self) -> str:
        """The lines as the programs printed them (process tags kept), one per line: what error readers quote."""
        return "\n".join(e.line for e in self.lines)

    def since_last(self, pattern: re.Pattern) -> UnwrappedLog:
        """The lines from the last one whose message matches `pattern` on (a log appended across restarts is judged
        by its latest start); all of them when none matches."""
        starts = [i for i, e in enumerate(self.lines) if pattern.search(e.message)]
        return UnwrappedLog(self.lines[starts[-1]:]) if starts else self


def unwrap_log(text: str) -> UnwrappedLog:
    """Every line of `text` through `unwrap_line`."""
    return UnwrappedLog(tuple(unwrap_line(line) for line in text.splitlines()))
