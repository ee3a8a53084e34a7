"""Issue 43.7: a run queued on the engine lock says who holds it and how long it has waited, every `every_s`, and a
timeout names the holder (the lock held here by this process through another open file: flock is per open file)."""

from __future__ import annotations

import fcntl
import os

import pytest

from llmval.core.errors import NotReady
from llmval.load import engine_lock, lock_holders


def test_a_queued_run_says_who_holds_the_lock_while_it_waits(tmp_path):
    path = tmp_path / "engine.lock"
    holder = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    said: list[str] = []
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert f"pid {os.getpid()}" in lock_holders(path)
        with pytest.raises(NotReady, match=rf"still held by pid {os.getpid()} .* after 1 s"), \
                engine_lock(path, 0.6, said.append, every_s=0.2):
            pass
    finally:
        os.close(holder)
    assert len(said) >= 2, said
    assert all(f"for pid {os.getpid()}" in line and "waiting" in line for line in said), said
    with engine_lock(path, 1.0, said.append):  # free now: taken at once, nothing said
        pass
