"""The machine-wide engine lock (flock): one measurement or extra engine at a time.

Waiting is bounded: a blocking flock interrupted by a timer (so the kernel queues us with the other
waiters instead of a poller that keeps losing the race), or bounded polling off the main thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
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


@contextlib.contextmanager
def engine_lock(path: Path, timeout_s: float):
    """Hold an exclusive flock on `path` for the block; NotReady if its holder keeps it past `timeout_s`."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if not _acquire(fd, timeout_s):
            raise NotReady(f"engine lock {path} still held by another process after {timeout_s:.0f} s "
                           f"(someone's extra engine or measurement; see `fuser {path}`)")
        yield
    finally:
        os.close(fd)
