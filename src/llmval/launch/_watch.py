"""What the readiness wait watches: progress (new log output), death, and restart counters.

One class per source, each returning an `Observation` per poll:

- `ProcessWatch`  our own background process: its log file's size; dead when it exited.
- `SystemdWatch`  `systemctl show` (NRestarts, ActiveState) and the unit's journal (cursor = progress).
- `DockerWatch`   `docker inspect` (RestartCount, State.Status) and `docker logs -t` (last line = progress).
- `FileWatch`     a remote log file's size and tail.

Every remote read is a declared command (`llmval.hostfacts.watch`), sent through `Connection.run` like a host
fact's: the inventory's unit, container or path is a typed argument, never spliced into shell text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.errors import HostError, UnsafeArgument
from ..hostfacts.watch import (
    TAIL_LINES,
    WATCH_CONTAINER,
    WATCH_CONTAINER_LOGS,
    WATCH_FILE,
    WATCH_JOURNAL,
    WATCH_UNIT,
)
from ..inventory.launch import WATCH_RE
from ..io.command import Rendered
from ..io.transport import Connection
from ._process import BackgroundProcess

JOURNAL_CURSOR_PREFIX = "-- cursor:"


@dataclass(frozen=True)
class Observation:
    """One look at a source while waiting."""

    progress: str
    """Changes whenever the source wrote something new."""
    tail: str = ""
    """The last log lines, for messages."""
    restarts: int | None = None
    """Restart counter (systemd NRestarts, docker RestartCount), where the source has one."""
    dead: str = ""
    """Non-empty when the source is dead: why (exit code, failed state)."""
    state: str = ""


class Watch:
    """Base: a named source that can be observed."""

    source: str

    def observe(self) -> Observation:
        raise NotImplementedError


class ProcessWatch(Watch):
    """A background process of ours and its log file."""

    def __init__(self, process: BackgroundProcess):
        self.process = process
        self.source = f"process:{process.name} (pid {process.pid}, log {process.log_path})"

    def observe(self) -> Observation:
        tail = self.process.log_tail(TAIL_LINES)
        dead = "" if self.process.is_running() else f"exited with code {self.process.process.returncode}"
        return Observation(progress=str(self.process.log_size()), tail=tail, dead=dead,
                           state=dead if dead else "running")


class _RemoteWatch(Watch):
    def __init__(self, source: str, connection: Connection, target: str):
        self.source = source
        self.connection = connection
        self.target = target

    def _run(self, command: Rendered) -> str:
        result = self.connection.run(command)
        return result.stdout + result.stderr


class SystemdWatch(_RemoteWatch):
    """A systemd unit: NRestarts climbing = crash loop; ActiveState=failed = dead; journal cursor = progress."""

    def observe(self) -> Observation:
        show = self._run(WATCH_UNIT.render(unit=self.target))
        props = dict(line.split("=", 1) for line in show.splitlines() if "=" in line)
        journal = self._run(WATCH_JOURNAL.render(unit=self.target))
        lines = journal.splitlines()
        cursor = next((line for line in reversed(lines) if line.startswith(JOURNAL_CURSOR_PREFIX)), "")
        tail = "\n".join(line for line in lines if not line.startswith(JOURNAL_CURSOR_PREFIX))
        restarts = int(props["NRestarts"]) if props.get("NRestarts", "").isdigit() else None
        state = f"{props.get('ActiveState', '?')}/{props.get('SubState', '?')}"
        dead = ""
        if props.get("ActiveState") == "failed":
            dead = f"unit failed (ExecMainStatus={props.get('ExecMainStatus', '?')})"
        return Observation(progress=cursor or tail, tail=tail, restarts=restarts, dead=dead, state=state)


class DockerWatch(_RemoteWatch):
    """A container: RestartCount climbing = crash loop; exited/dead = dead; last `docker logs -t` line = progress."""

    def observe(self) -> Observation:
        inspect = self.connection.run(WATCH_CONTAINER.render(name=self.target))
        logs = self._run(WATCH_CONTAINER_LOGS.render(name=self.target))
        fields = inspect.stdout.split()
        if inspect.rc != 0 or len(fields) != 3:
            return Observation(progress=logs, tail=logs, dead=f"container missing: {inspect.stderr.strip()[-200:]}")
        restarts, status, exit_code = fields
        dead = f"container {status} (exit code {exit_code})" if status in {"exited", "dead"} else ""
        last = logs.strip().splitlines()[-1:] or [""]
        return Observation(progress=last[0], tail=logs, restarts=int(restarts) if restarts.isdigit() else None,
                           dead=dead, state=status)


class FileWatch(_RemoteWatch):
    """A log file on a host: its size is the progress."""

    def observe(self) -> Observation:
        out = self._run(WATCH_FILE.render(path=self.target))
        size, _, tail = out.partition("\n")
        return Observation(progress=size.strip(), tail=tail)


WATCH_KINDS: dict[str, type[_RemoteWatch]] = {"systemd": SystemdWatch, "docker": DockerWatch, "file": FileWatch}


def remote_watch(source: str, connection_to: Callable[[str], Connection]) -> Watch | None:
    """The watch for a `kind:target@host` source; None for `process` (our background steps)."""
    m = WATCH_RE.match(source)
    if m is None or m["kind"] is None:
        return None
    return WATCH_KINDS[m["kind"]](source, connection_to(m["host"]), m["target"])


def observe_safely(watch: Watch) -> Observation | str:
    """The observation, or why the source could not be read (a host error is not a verdict)."""
    try:
        return watch.observe()
    except (HostError, UnsafeArgument) as error:
        return str(error).splitlines()[0]
