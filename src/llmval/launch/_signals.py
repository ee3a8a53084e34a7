"""Signals around a launched stack: SIGTERM/SIGHUP end the run like Ctrl-C, and teardown is not cut short.

pytest tears fixtures down after a KeyboardInterrupt but not after SIGTERM (the default action kills
the interpreter, leaving the engine running in its own process group). `terminate_as_interrupt()`
turns SIGTERM and SIGHUP into KeyboardInterrupt; `signals_deferred()` holds SIGINT/SIGTERM/SIGHUP
while teardown runs and re-raises the first one afterwards.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

INTERRUPTING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"received {signal.Signals(signum).name}")


def install_terminate_as_interrupt() -> Callable[[], None]:
    """Make SIGTERM/SIGHUP raise KeyboardInterrupt; returns a function restoring the old handlers."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in INTERRUPTING_SIGNALS}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


@contextlib.contextmanager
def signals_deferred(say: Callable[[str], None] = print) -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the block ends, then raise KeyboardInterrupt for the first one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: object) -> None:
        received.append(signum)
        say(f"[launch] {signal.Signals(signum).name} received during teardown: finishing teardown first")

    previous = {sig: signal.signal(sig, hold) for sig in DEFERRED_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        raise KeyboardInterrupt(f"received {signal.Signals(received[0]).name} during teardown")
