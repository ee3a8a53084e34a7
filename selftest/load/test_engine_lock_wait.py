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


def test_every_engine_lock_the_project_takes_says_its_waiting():
    """43.7 held for the perf session, while `llmval bench` (its command-line tools) took the lock with no `say`
    and printed nothing for minutes while queued. Every `engine_lock(...)` call in src/ and fixtures/ passes one."""
    import ast

    from selftest.strategies import ROOT

    silent = []
    for path in sorted([*(ROOT / "src" / "llmval").rglob("*.py"), *(ROOT / "fixtures").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == \
                    "engine_lock" and len(node.args) < 3 and not any(k.arg == "say" for k in node.keywords):
                silent.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not silent, f"engine_lock taken without a say (silent while queued): {silent}"


def test_a_command_line_tool_says_its_waiting_on_stderr(tmp_path, capsys):
    from llmval.load import say_on_stderr

    path = tmp_path / "engine.lock"
    holder = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(NotReady), engine_lock(path, 0.5, say_on_stderr, every_s=0.2):
            pass
    finally:
        os.close(holder)
    out, err = capsys.readouterr()
    assert not out and f"llmval: engine lock {path}: waiting" in err and f"for pid {os.getpid()}" in err, err
