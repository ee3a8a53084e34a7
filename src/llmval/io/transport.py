"""Run commands on inventory hosts through pytest-testinfra, always with a timeout.

testinfra's backends all end in `run_local` (ssh and docker build a local command line), and
`run_local` waits forever. `_Bounded` replaces it with a run that kills the whole process group at
the deadline, so a hung `nvidia-smi` or a black-holed ssh fails that host's check in `timeout_s`
without blocking the others. Remote commands also run under `timeout` on the far side (a hung
nvidia-smi there is killed too), with the local deadline a little later. The Proxmox `pct` backend is
ssh to the node, then `pct exec <id> -- timeout -k 2 <T> /bin/sh -c <command>` there. ssh hosts
share one multiplexed connection (ControlMaster/ControlPath) per host; ssh's own failure (rc 255)
becomes `HostUnreachable`, never a testinfra RuntimeError.

`Connection.run` sends only a declared, rendered `Command` (`llmval.io.command`: `UNAME.render()`), so nothing
a smoke or nightly run sends can be other than an allowed read; `Connection.run_step` is the one explicit
path for the inventory's own `[launch]` steps (`--launch`), which are shell text by design.

    >>> from llmval.hostfacts import UNAME
    >>> conn = connect(HostSpec(name="me", platform="p"))
    >>> conn.run(UNAME.render()).rc
    0
    >>> conn.run("uname -a")   # raises TypeError: Connection.run sends only a declared Command rendered by ...
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import testinfra
import testinfra.backend
from testinfra.backend.base import CommandResult as TestinfraResult
from testinfra.backend.docker import DockerBackend
from testinfra.backend.local import LocalBackend
from testinfra.backend.ssh import SshBackend

from ..core.errors import CommandFailed, CommandTimeout, HostUnreachable, UnsafeArgument
from ..inventory import HostSpec, Inventory
from .command import Rendered, is_declared
from .recording import CommandResult, Recorder, Replay

SSH_UNREACHABLE_RC = 255
REMOTE_TIMEOUT_RCS = (124, 137)
"""Exit codes of `timeout -k` when it had to stop (TERM) or kill (KILL) the command."""
REMOTE_GRACE_S = 4.0
"""The local deadline of a remote command is its remote deadline plus this (the far side stops it first)."""


class _Timeout(Exception):
    def __init__(self, stdout: bytes, stderr: bytes):
        self.stdout, self.stderr = stdout, stderr


class _Bounded:
    """Mixin for testinfra backends: `run_local` with a deadline that kills the process group."""

    timeout_s: float = 20.0
    env: dict[str, str] | None = None
    """Environment for the local process (None: inherit)."""
    remote_timeout_s: float | None = None
    """Set for remote backends: the command also runs under `timeout` on the far side, so a hung remote
    nvidia-smi is killed there too (killing the local ssh client alone would leave it running)."""

    def _deadlined(self, inner: str) -> str:
        """`timeout -k 2 T /bin/sh -c <inner>` on the far side (or just `/bin/sh -c <inner>`)."""
        if self.remote_timeout_s is None:
            return self.quote("/bin/sh -c %s", inner)  # type: ignore[attr-defined]
        return self.quote("timeout -k 2 %s /bin/sh -c %s", f"{self.remote_timeout_s:g}", inner)  # type: ignore

    def run_local(self, command: str, *args: str) -> TestinfraResult:
        cmd = self.encode(self.quote(command, *args))  # type: ignore[attr-defined]
        process = subprocess.Popen(
            cmd, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, env=self.env,
        )
        stdout, stderr, is_done = _capture(process, time.monotonic() + self.timeout_s)
        if not is_done:
            _kill_group(process)
            # a grandchild that left the group may still hold the pipes: read on 2 s at most, then let it be
            more_out, more_err, is_drained = _capture(process, time.monotonic() + 2, stdout, stderr)
            if not is_drained:
                more_err.write(b"(output lost: a child process outside the group kept the pipes open)")
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
            raise _Timeout(more_out.value(), more_err.value()) from None
        return self.result(process.returncode, cmd, stdout.value(), stderr.value())  # type: ignore[attr-defined]

    def run_ssh(self, command: str) -> TestinfraResult:
        """testinfra's run_ssh, minus its RuntimeError on rc 255 (Connection turns that into HostUnreachable)."""
        cmd, cmd_args = self._build_ssh_command(command)  # type: ignore[attr-defined]
        out = self.run_local(" ".join(cmd), *cmd_args)
        out.command = self.encode(command)  # type: ignore[attr-defined]
        return out


MAX_OUTPUT_BYTES = 16 * 2**20
"""What is kept of each stream (stdout, stderr) of a host command: 16 MiB, its first and last 8 MiB. The largest
real output read is a few hundred kB (`nvidia-smi -q -x` of 8 GPUs, an engine log's evidence lines); a command
that prints 1.5 GB (a log without its filter, /dev/zero through a wrong path) took 2,955 MiB and a MemoryError."""
MAX_OUTPUT_LINES = 200_000
"""...and of its lines: the first and last 100,000 (a parser splits the output into lines: 16 MiB of empty lines
would be 16 M strings, 900 MB)."""


class _Kept:
    """One stream of a command, bounded as it is read: its head and tail kept, the middle counted, never held."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = MAX_OUTPUT_BYTES // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > MAX_OUTPUT_BYTES:  # trimmed now and then, not per chunk: linear in what is read
                del self.tail[:-(MAX_OUTPUT_BYTES // 2)]

    def value(self) -> bytes:
        """The stream whole when within both caps; else its first and last bytes (and lines) around one line
        saying what was cut."""
        lines = MAX_OUTPUT_LINES // 2
        if self.total == len(self.head) + len(self.tail) <= MAX_OUTPUT_BYTES:  # nothing dropped yet
            whole = bytes(self.head + self.tail)
            if whole.count(b"\n") <= MAX_OUTPUT_LINES:
                return whole
            head = tail = whole  # within the bytes, over the lines: both ends cut from the whole
        else:
            head, tail = bytes(self.head), bytes(self.tail[-(MAX_OUTPUT_BYTES // 2):])
        if head.count(b"\n") > lines:
            head = head[:_nth_newline(head, lines) + 1]
        if tail.count(b"\n") > lines:
            tail = tail[_nth_newline_from_end(tail, lines + 1) + 1:]
        cut = self.total - len(head) - len(tail)
        said = (f"\n[llmval: {cut} bytes of this output cut here: it printed {self.total} bytes; the first and last "
                f"{MAX_OUTPUT_BYTES // 2**21} MiB and {lines} lines of it are kept]\n")
        return head + said.encode() + tail


def _nth_newline(data: bytes, n: int) -> int:
    at = -1
    for _ in range(n):
        at = data.index(b"\n", at + 1)
    return at


def _nth_newline_from_end(data: bytes, n: int) -> int:
    at = len(data)
    for _ in range(n):
        at = data.rindex(b"\n", 0, at)
    return at


def _capture(process: subprocess.Popen, deadline: float, stdout: _Kept | None = None,
             stderr: _Kept | None = None) -> tuple[_Kept, _Kept, bool]:
    """Read both pipes of `process` until they close and it exits, or until `deadline`; each stream kept within
    `MAX_OUTPUT_BYTES`/`MAX_OUTPUT_LINES` while it is read. (stdout, stderr, whether it finished in time)."""
    stdout, stderr = stdout or _Kept(), stderr or _Kept()
    streams = {process.stdout: stdout, process.stderr: stderr}
    with selectors.DefaultSelector() as selector:
        for pipe in streams:
            if pipe is not None and not pipe.closed:
                selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return stdout, stderr, False
            for key, _ in selector.select(min(left, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    streams[key.fileobj].write(chunk)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:  # closed its pipes but runs on
        return stdout, stderr, False
    return stdout, stderr, True


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class BoundedLocalBackend(_Bounded, LocalBackend):
    NAME = "llmval-local"


class BoundedSshBackend(_Bounded, SshBackend):
    NAME = "llmval-ssh"

    def run(self, command: str, *args: str, **kwargs: Any) -> TestinfraResult:
        return self.run_ssh(self._deadlined(self.get_command(command, *args)))


class BoundedDockerBackend(_Bounded, DockerBackend):
    NAME = "llmval-docker"


class PctBackend(_Bounded, SshBackend):
    """ssh to a Proxmox node, then `pct exec <container> -- /bin/sh -c <command>`."""

    NAME = "pct"

    def __init__(self, hostspec: str, container: str | int, *args: Any, **kwargs: Any):
        self.container = str(container)
        super().__init__(hostspec, *args, **kwargs)

    def get_pytest_id(self) -> str:
        return f"pct://{self.host.name}?container={self.container}"

    def run(self, command: str, *args: str, **kwargs: Any) -> TestinfraResult:
        inner = self.get_command(command, *args)
        return self.run_ssh(self.quote("pct exec %s -- ", self.container) + self._deadlined(inner))


class _DockerViaSsh(_Bounded, SshBackend):
    """`docker exec` inside a container of a remote docker host, over ssh."""

    NAME = "llmval-docker-ssh"

    def __init__(self, hostspec: str, container: str, *args: Any, **kwargs: Any):
        self.container = container
        super().__init__(hostspec, *args, **kwargs)

    def run(self, command: str, *args: str, **kwargs: Any) -> TestinfraResult:
        inner = self.get_command(self.quote("docker exec %s /bin/sh -c %s", self.container,
                                            self.get_command(command, *args)))
        return self.run_ssh(self._deadlined(inner))


# Registered so that `--hosts=pct://root@node?container=129` works for plain testinfra users too.
testinfra.backend.BACKENDS.setdefault("pct", f"{__name__}.PctBackend")


def control_dir() -> Path:
    """A private (0700, ours, not a link) folder for ssh control sockets: `<tmp>/llmval-ssh-<uid>`. In a
    world-writable /tmp itself, another user could pre-create the socket path and hijack or block the
    connection. Short, because socket paths are limited to 108 bytes."""
    folder = Path(tempfile.gettempdir()) / f"llmval-ssh-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise HostUnreachable("ssh", str(folder), f"{folder} is not a private folder of ours (mode "
                              f"{stat.filemode(info.st_mode)}, owner uid {info.st_uid}); remove it and run again")
    return folder


def control_path() -> str:
    """One multiplexed ssh connection per (user, host, port); %C is ssh's hash of them."""
    return str(control_dir() / "%C")


def _ssh_kwargs(spec: HostSpec, timeout_s: float) -> dict[str, Any]:
    transport = spec.transport
    kwargs: dict[str, Any] = {
        # testinfra %-formats the ssh line but escapes only ssh_extra_args, so ControlPath (with %C) goes here
        "ssh_extra_args": " ".join([
            "-o BatchMode=yes", f"-o ConnectTimeout={max(1, int(timeout_s))}",
            "-o ServerAliveInterval=5", "-o ServerAliveCountMax=2", "-o StrictHostKeyChecking=accept-new",
            "-o ControlMaster=auto", "-o ControlPersist=120s", f"-o ControlPath={control_path()}",
        ]),
        "controlpersist": 120,
    }
    if transport.identity_file:  # type: ignore[union-attr]
        kwargs["ssh_identity_file"] = os.path.expanduser(transport.identity_file)  # type: ignore[union-attr]
    if transport.ssh_config:  # type: ignore[union-attr]
        kwargs["ssh_config"] = os.path.expanduser(transport.ssh_config)  # type: ignore[union-attr]
    return kwargs


def _ssh_hostspec(spec: HostSpec) -> str:
    t = spec.transport
    return f"{t.user}@{t.address}:{t.port}"  # type: ignore[union-attr]


TRANSPORT_VALUE_RE = re.compile(r"[A-Za-z0-9_.:@%\[\]-]+")
"""What an ssh address or user, or a container name, may hold (an IPv6 address in brackets included)."""


def _refuse_option_shaped(spec: HostSpec) -> None:
    """Even if inventory validation missed it, no transport value may become an ssh or docker option
    (`-oProxyCommand=...` as an address, `--privileged` as a container): raise UnsafeArgument instead."""
    t = spec.transport
    for key in ("address", "user", "container"):
        value = getattr(t, key, None)
        if isinstance(value, str) and (value.startswith("-") or not TRANSPORT_VALUE_RE.fullmatch(value)):
            raise UnsafeArgument(f"{t.kind} transport of {spec.name}", key, value,
                                 "starts with '-' or holds characters other than [A-Za-z0-9_.:@%[]-]")
    for key in ("identity_file", "ssh_config"):
        value = getattr(t, key, None)
        if isinstance(value, str) and value.startswith("-"):
            raise UnsafeArgument(f"{t.kind} transport of {spec.name}", key, value, "starts with '-'")


def _backend(spec: HostSpec, inventory: Inventory | None) -> _Bounded:
    _refuse_option_shaped(spec)
    transport = spec.transport
    timeout_s = spec.timeout_s
    backend: _Bounded
    if transport.kind == "local":
        backend = BoundedLocalBackend()
        if transport.path_prepend:
            backend.env = {**os.environ, "PATH": os.pathsep.join([*transport.path_prepend,
                                                                   os.environ.get("PATH", os.defpath)])}
    elif transport.kind == "ssh":
        backend = BoundedSshBackend(_ssh_hostspec(spec), **_ssh_kwargs(spec, timeout_s))
    elif transport.kind == "docker" and transport.via is None:
        backend = BoundedDockerBackend(transport.container)
    else:
        if inventory is None:
            raise ValueError(f"[{spec.name}] transport.via needs the inventory to resolve it")
        node = inventory.host(transport.via)  # type: ignore[union-attr]
        _refuse_option_shaped(node)
        if node.transport.kind != "ssh":
            raise ValueError(f"[{spec.name}] transport.via '{node.name}' must be an ssh host")
        cls = PctBackend if transport.kind == "pct" else _DockerViaSsh
        backend = cls(_ssh_hostspec(node), transport.container, **_ssh_kwargs(node, timeout_s))  # type: ignore[union-attr]
    backend.timeout_s = timeout_s
    return backend


class Connection:
    """Commands on one inventory host: bounded, recorded when asked, or replayed."""

    def __init__(self, spec: HostSpec, *, inventory: Inventory | None = None,
                 recorder: Recorder | None = None, replay: Replay | None = None):
        self.spec = spec
        self.name = spec.name
        self._recorder = recorder
        self._replay = replay
        self._backend = None if replay is not None else _backend(spec, inventory)
        self.testinfra_host = None if self._backend is None else testinfra.host.Host(self._backend)

    def __repr__(self) -> str:
        return f"Connection({self.name!r}, {self.spec.transport.kind})"

    @property
    def _is_over_ssh(self) -> bool:
        kind = self.spec.transport.kind
        return kind in {"ssh", "pct"} or (kind == "docker" and getattr(self.spec.transport, "via", None) is not None)

    def run(self, command: Rendered, *, timeout_s: float | None = None) -> CommandResult:
        """Run a declared command (`CMD.render(...)`); never raises for a non-zero exit, only for no answer.
        Anything else (shell text, a Command off the allow-list) is a TypeError: a programming error."""
        if not is_declared(command):
            raise TypeError(f"Connection.run sends only a declared Command rendered by its render(...) (e.g. "
                            f"UNAME.render()), not {str(command)[:120]!r}; an inventory [launch] step goes through "
                            "run_step")
        return self._send(command, timeout_s)

    def run_step(self, command: str, *, timeout_s: float | None = None) -> CommandResult:
        """Run an inventory `[launch]` step's own shell text (`--launch` only: start, wait and stop steps). Never
        recorded: a recording is evidence of read-only commands, and a step is an action (a recording holding one
        is refused at replay; seen with the Ray launch's `ray start` steps on the lent H200, 2026-12-02)."""
        return self._send(str(command), timeout_s, evidence=False)

    def _send(self, sent: str, timeout_s: float | None, *, evidence: bool = True) -> CommandResult:
        command = str(sent)
        if self._replay is not None:
            result = self._replay.command(self.name, sent)
        else:
            result = self._run_live(command, timeout_s or self.spec.timeout_s)
        if self._recorder is not None and self._replay is None and evidence:
            self._recorder.command(result)
        if result.timed_out:
            so_far = (result.stderr.strip() or result.stdout.strip())[-300:]
            raise CommandTimeout(self.name, command, f"no answer within {timeout_s or self.spec.timeout_s:g} s "
                                 f"(killed); output so far: {so_far!r}")
        if self._is_over_ssh and result.rc == SSH_UNREACHABLE_RC:
            raise HostUnreachable(self.name, command, f"ssh failed (rc 255): {result.stderr.strip()[-300:]}")
        return result

    def _run_live(self, command: str, timeout_s: float) -> CommandResult:
        assert self._backend is not None and self.testinfra_host is not None
        remote = self._is_over_ssh
        self._backend.timeout_s = timeout_s + (REMOTE_GRACE_S if remote else 0)
        self._backend.remote_timeout_s = timeout_s if remote else None
        started = time.monotonic()
        try:
            out = self.testinfra_host.run(command)
        except _Timeout as timeout:
            return CommandResult(self.name, command, -9, timeout.stdout.decode("utf-8", "replace"),
                                 timeout.stderr.decode("utf-8", "replace"),
                                 round(time.monotonic() - started, 3), timed_out=True)
        elapsed = round(time.monotonic() - started, 3)
        timed_out = remote and out.rc in REMOTE_TIMEOUT_RCS and elapsed >= timeout_s
        # testinfra decodes with the host's locale and raises on a byte it cannot (journald's NUL-bearing or
        # invalid UTF-8 lines, a binary file): decoded here like the timeout's output, a bad byte as U+FFFD
        return CommandResult(self.name, command, out.rc, out.stdout_bytes.decode("utf-8", "replace"),
                             out.stderr_bytes.decode("utf-8", "replace"), elapsed, timed_out=timed_out)

    def check_output(self, command: Rendered, *, timeout_s: float | None = None) -> str:
        """stdout of `command`, or CommandFailed naming the host, command, rc and the end of stderr (or stdout)."""
        __tracebackhide__ = True
        result = self.run(command, timeout_s=timeout_s)
        if result.rc != 0:
            raise CommandFailed(self.name, command, result.failure)
        return result.stdout


def connect(spec: HostSpec, *, inventory: Inventory | None = None, recorder: Recorder | None = None,
            replay: Replay | None = None) -> Connection:
    """A connection to the inventory host `spec`."""
    return Connection(spec, inventory=inventory, recorder=recorder, replay=replay)
