"""SIGTERM/SIGHUP end a --launch run like Ctrl-C; a signal during teardown waits until teardown is done."""

from __future__ import annotations

import os
import signal

import pytest

from llmval.launch import install_terminate_as_interrupt, signals_deferred


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_terminate_becomes_keyboard_interrupt_and_is_restored(sig):
    before = signal.getsignal(sig)
    restore = install_terminate_as_interrupt()
    try:
        with pytest.raises(KeyboardInterrupt, match=sig.name):
            os.kill(os.getpid(), sig)
    finally:
        restore()
    assert signal.getsignal(sig) == before


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_teardown_is_held_until_teardown_finishes(sig):
    steps, said = [], []
    with pytest.raises(KeyboardInterrupt, match=f"{sig.name} during teardown"), signals_deferred(said.append):
        steps.append("stop steps")
        os.kill(os.getpid(), sig)
        steps.append("process groups")  # still runs: the signal was held
    assert steps == ["stop steps", "process groups"]
    assert said == [f"[launch] {sig.name} received during teardown: finishing teardown first"]
