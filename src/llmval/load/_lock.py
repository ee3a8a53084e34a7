"""The machine-wide engine lock (flock): one measurement or extra engine at a time.

Waiting is bounded: a blocking flock interrupted by a timer (so the kernel queues us with the other
waiters instead of a poller that keeps losing the race), or bounded polling off the main thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import threading
import time
from pathlib import Path

from ..core.errors import NotReady

ENGINE_LOCK = Path("/tmp/llmval-engine.lock")
"""The machine-wide lock every perf measurement, bench and extra engine holds by default (`--perf-lock`, `--lock`)."""


class _LockTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _LockTimeout


def _acquire(fd: int, timeout_s: float) -> bool:
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, max(timeout_s, 0.001))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return True
        except _LockTimeout:
            return False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)


LOCK_SAY_EVERY_S = 15.0
"""How often a run queued on the engine lock says who holds it and how long it has waited."""


def lock_holders(path: Path) -> str:
    """Who holds the flock on `path`: `pid 4242 (python -m pytest -m perf)` from /proc/locks, or why unknown."""
    try:
        inode = os.stat(path).st_ino
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError as error:
        return f"a process this host does not name ({error.strerror or error})"
    holders = []
    for line in lines:
        fields = line.split()
        # `1: FLOCK  ADVISORY  WRITE 4242 08:02:1310734 0 EOF` (a waiter's line starts `1: -> FLOCK ...`)
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK" or not fields[5].endswith(f":{inode}"):
            continue
        pid = fields[4]
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                argv = cmdline.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            argv = ""
        holders.append(f"pid {pid}" + (f" ({argv[:120]})" if argv else ""))
    return ", ".join(dict.fromkeys(holders)) or "a process this host does not name (in another pid namespace?)"


def say_on_stderr(line: str) -> None:
    """The `say` of a command-line tool (`llmval bench ...`) queued on the engine lock: its waiting on stderr, at
    once (stdout carries its tables and may be piped)."""
    print(f"llmval: {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def engine_lock(path: Path, timeout_s: float, say=None, every_s: float = LOCK_SAY_EVERY_S):
    """Hold an exclusive flock on `path` for the block; NotReady if its holder keeps it past `timeout_s`. While it
    waits, `say` (a progress writer) is told every `every_s` who holds the lock and how long it has waited: a perf
    run queued behind another measurement otherwise prints nothing for minutes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        started = time.monotonic()
        while True:
            remaining = timeout_s - (time.monotonic() - started)
            if _acquire(fd, max(remaining if say is None else min(remaining, every_s), 0.001)):
                break
            waited = time.monotonic() - started
            if waited >= timeout_s:
                raise NotReady(f"engine lock {path} still held by {lock_holders(path)} after {timeout_s:.0f} s "
                               f"(someone's extra engine or measurement; see `fuser {path}`)")
            say(f"engine lock {path}: waiting {waited:.0f} s (at most {timeout_s:.0f} s) for {lock_holders(path)}")
        yield
    finally:
        os.close(fd)
