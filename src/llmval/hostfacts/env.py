"""The serving process's environment: from its systemd unit, its container, or the process itself.

For `process:<pattern>` the process that actually serves is read, not the oldest match: the oldest is
often a wrapper (`timeout 90 env NCCL_P2P_DISABLE=1 ... torchrun ...`, a shell, a supervisor) whose own
environ lacks what its child got. Among the `pgrep -f` matches, the serving process is not a wrapper
(`WRAPPERS`), has no matching descendant (the deepest), and is the longest-running of those; the verdict
names its pid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.errors import CommandFailed, LlmvalError, ReplayMiss
from ..inventory import Source
from ..parsers.env import parse_environ
from ..parsers.procs import split_ps_rows
from ._command import NUMBER, PATTERN, Command
from ._fact import Reader, fact


class ServingProcessGone(LlmvalError):
    """The serving process (or container) whose environment a check reads is not there: the server is down (then
    `serving.health` says so, and this check waits on it), or the inventory's `env.source` names no process."""


PROCESS_MATCHES = Command("process-matches",
                          "pgrep -d, -f -- {pattern} | xargs -r ps -o pid=,ppid=,etimes=,comm= -p", pattern=PATTERN)
"""pid, parent pid, seconds since start and name of every process whose command line matches."""
PROCESS_ENVIRON = Command("process-environ", "tr '\\0' '\\n' < /proc/{pid}/environ", pid=NUMBER)
PROCESS_ENV = Command("process-env", "tr '\\0' '\\n' < /proc/$(pgrep -o -f {pattern})/environ", pattern=PATTERN)
"""The oldest match's environ: what recordings made before `PROCESS_MATCHES` existed answer (replays only)."""


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    age_s: int
    name: str


@dataclass(frozen=True)
class Environment:
    """Variables of the serving process, and where they were read (`read_from`, quoted in verdicts)."""

    variables: dict[str, str] = field(default_factory=dict)
    read_from: str = ""

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.variables.get(name, default)


def parse_process_matches(text: str) -> list[ProcessInfo]:
    """`ps -o pid=,ppid=,etimes=,comm=` rows (the name may hold spaces)."""
    return [ProcessInfo(*row) for row in split_ps_rows(text, "comm", label="name", missing="?")]


WRAPPERS = frozenset({
    "timeout", "env", "flock", "nohup", "setsid", "stdbuf", "nice", "ionice", "taskset", "numactl", "chrt",
    "sh", "bash", "dash", "zsh", "su", "sudo", "runuser", "tini", "dumb-init", "catatonit", "xargs", "watch",
    "systemd-run", "script", "time", "strace", "ltrace", "gdb",
})
"""Process names that only start (or wait to start) another program: never the serving process itself."""


def serving_process(matches: list[ProcessInfo]) -> ProcessInfo | None:
    """The serving process among the `pgrep -f` matches: not a wrapper (`timeout`, `env`, a shell, `flock` still
    waiting for its lock); of the rest, one with no matching descendant (wrappers exec or spawn the server);
    of those, the longest-running (a passer-by whose command line mentions the pattern is younger)."""
    candidates = [m for m in matches if m.name not in WRAPPERS] or matches
    parents = {m.ppid for m in candidates}
    leaves = [m for m in candidates if m.pid not in parents] or candidates
    return max(leaves, key=lambda m: (m.age_s, -m.pid), default=None)


def not_self(pattern: str) -> str:
    """`vllm.x` as `[v]llm.x`: the same regex for pgrep, but no longer matching the shell whose own command
    line carries it (else, with no engine running, `pgrep -f` finds that shell and reads its environment).

    >>> not_self("vllm.entrypoints.openai.api_server")
    '[v]llm.entrypoints.openai.api_server'
    """
    return f"[{pattern[0]}]{pattern[1:]}" if pattern[:1].isalnum() else pattern


@fact(PROCESS_MATCHES, section="env.source", needs=lambda h: False)
def process_matches(host: Reader, pattern: str) -> list[ProcessInfo]:
    """Processes whose command line matches `pattern` (pgrep -f), with their parents."""
    return parse_process_matches(host.output(PROCESS_MATCHES, pattern=not_self(pattern)))


def _process_environment(host: Reader, pattern: str) -> Environment | None:
    try:
        matches = host.process_matches(pattern)
    except ReplayMiss:  # a recording from before the serving-pid read: it answers the oldest match's environ
        result = host.result(PROCESS_ENV, pattern=not_self(pattern))
        if result.rc != 0 or not result.stdout.strip():
            return None
        return Environment(parse_environ(result.stdout), "the oldest pgrep match (recorded before the serving-pid "
                           "read; pid not recorded)")
    chosen = serving_process(matches)
    if chosen is None:
        return None
    result = host.result(PROCESS_ENVIRON, pid=chosen.pid)
    if "permission denied" in result.stderr.lower():
        raise CommandFailed(host.name, result.command, f"cannot read the environ of pid {chosen.pid} "
                            f"({chosen.name}): {result.stderr.strip()[-200:]}; run as its user or root")
    if result.rc != 0 or not result.stdout.strip():
        return None  # it exited between the two reads
    others = f" ({len(matches) - 1} other matches: wrappers or peers)" if len(matches) > 1 else ""
    return Environment(parse_environ(result.stdout), f"pid {chosen.pid} ({chosen.name}){others}")


@fact(PROCESS_ENVIRON, PROCESS_ENV, section="env",
      judges={"env.required": "hosts.env.*", "env.forbidden": "hosts.env.*"},
      needs=lambda h: [(h.env.source,)] if h.env else [])
def environment(host: Reader, source: Source) -> Environment | None:
    """The serving process's environment from `systemd:<unit>`, `docker:<name>` or `process:<pattern>`;
    None when the unit, container or process does not exist."""
    if source.kind == "systemd":
        unit = host.unit(source.value)
        return Environment(unit.environment, f"unit {source.value}") if unit.exists else None
    if source.kind == "docker":
        container = host.container(source.value)
        return None if container is None else Environment(container.env, f"container {source.value}")
    return _process_environment(host, source.value)
