"""A launch owns its endpoint for the run: one lock per endpoint, and the listener that answers must be its own.

Two `--launch` runs on one port: run B's engine never bound the port, run A's answered, and B said
"ready after 5.9 s" and judged A's engine. Two rules make that impossible:

- `EndpointLock`: an exclusive `flock` on `<tmp>/llmval-launch-<host>-<port>.lock` (every local spelling of the
  host is one key, `localhost`), taken before the preflight's port check and held until teardown is done; a
  second launch of the endpoint is refused at once, naming the run that holds it (the lock file says its pid,
  launch id, deployment, start time and logs). The kernel drops the lock when its holder dies (SIGKILL too).
  It is a lock of this machine: two suites on two machines launching one remote endpoint do not see it.
- `foreign_listeners`: where the launch started local processes of its own (`background` steps, tagged with
  `LLMVAL_LAUNCH_ID`), the process listening on a local endpoint's port when it answers ready must carry this
  launch's tag; any other (another run's engine, a server no launch started, one this user cannot see) is not
  this launch's engine. An engine that systemd or docker starts carries no tag: there the lock alone holds.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import re
import tempfile
from pathlib import Path

from ..core.errors import ParseError
from ..core.jsontext import read_json
from ._errors import PortHeld
from ._proc import ProcessInfo, launch_id_of, listeners

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0", "::"}
LOCK_DIR_ENV = "LLMVAL_LAUNCH_LOCK_DIR"
"""Where the endpoint locks live (default: the temporary folder, /tmp): one folder for every suite of a machine."""


def lock_path(host: str, port: int) -> Path:
    """The lock file of endpoint `host:port` (every local spelling of the host is `localhost`)."""
    key = "localhost" if host.lower() in LOCAL_HOSTS else host.lower()
    folder = Path(os.environ.get(LOCK_DIR_ENV) or tempfile.gettempdir())
    return folder / f"llmval-launch-{re.sub(r'[^a-z0-9.-]', '_', key)}-{port}.lock"


class EndpointLock:
    """The launch's hold on one endpoint (see the module docstring); `release()` is idempotent."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def take(cls, name: str, host: str, port: int, holder: dict) -> EndpointLock:
        """Hold the lock of `host:port` for endpoint `name`, writing `holder` into it; PortHeld naming the run
        that holds it."""
        path = lock_path(host, port)
        try:
            fd = _open_lock(path)
        except OSError as error:
            raise PortHeld(f"[{name}] cannot open the launch lock of {host}:{port} ({path}): {error.strerror}; "
                           f"a launch never starts without owning its endpoint") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            said = _holder(fd)
            os.close(fd)
            raise PortHeld(
                f"[{name}] {host}:{port} is held by another --launch run ({said}; lock {path}).\n"
                "  The suite will not start a second stack on an endpoint another run launched, nor judge its "
                "engine: wait for that run to end, or give this one another port.") from None
        with contextlib.suppress(OSError):  # what a refused run names; a lock that says nothing still holds
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps({**holder, "pid": os.getpid(),
                                       "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
                           + "\n").encode(), 0)
        return cls(path, fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor drops the flock
            self._fd = None

    def __del__(self) -> None:  # a Stack dropped without stop() (a refused launch in a test) holds nothing
        self.release()

    @property
    def is_held(self) -> bool:
        return self._fd is not None


def _open_lock(path: Path) -> int:
    """The lock file, created readable and writable by every user (one lock per endpoint on the machine, whoever
    runs the suite); another user's file that this user may only read is locked read-only (flock needs no write)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with contextlib.suppress(OSError):  # only its owner may; the umask would leave 0644
        os.fchmod(fd, 0o666)
    return fd


def _holder(fd: int) -> str:
    """The run that holds the lock, from what it wrote into the file."""
    try:
        said = read_json(os.pread(fd, 4096, 0) or b"{}", "the launch lock file")
    except (OSError, ParseError):
        said = {}
    if not isinstance(said, dict) or "pid" not in said:
        return "a run that wrote nothing into the lock"
    parts = [f"pid {said['pid']}", f"launch id {said.get('launch_id', '?')}"]
    parts += [f"{key} {said[key]}" for key in ("deployment", "since", "logs") if said.get(key)]
    return ", ".join(parts)


def foreign_listeners(port: int, launch_id: str) -> tuple[list[ProcessInfo], list[ProcessInfo]]:
    """The local processes listening on `port`: (this launch's, everyone else's)."""
    found = listeners(port)
    ours = [p for p in found if launch_id_of(p.pid) == launch_id]
    return ours, [p for p in found if p not in ours]


def describe_listener(process: ProcessInfo) -> str:
    """`pid 12 (pgid 12): <cmdline>, started by --launch run <id>` or `..., started by no --launch run`."""
    other = launch_id_of(process.pid)
    return f"{process}, " + (f"started by --launch run {other}" if other else "started by no --launch run")
