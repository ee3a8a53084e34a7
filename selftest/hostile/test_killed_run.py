"""A killed run leaves no stale GREEN (issue 23.6): SIGTERM (systemd's stop, CI's cancel) ends a run like Ctrl-C.

After a GREEN run, a RED run is stopped by SIGTERM while a planted test is still running: status.md, results.json
and junit.xml must be this run's (RED, exit status 2, the failure named), not the previous GREEN ones.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from selftest.strategies import ROOT, sigint_as_in_a_terminal

pytestmark = pytest.mark.subprocess  # the contract run in a child, then signalled
INVENTORY = ROOT / "selftest" / "data" / "inventories" / "report-blockers.toml"
GREEN = '''
def test_holds(expect):
    expect("localhost", "selftest.killed.first", expected=1, observed=1)
'''
RED_THEN_WAIT = '''
import os, pathlib, time


def test_breaks(expect):
    expect("localhost", "selftest.killed.first", expected=1, observed=2)


def test_waits_to_be_killed():
    pathlib.Path(os.environ["LLMVAL_SELFTEST_WAITING"]).touch()
    time.sleep(120)
'''


def _run(folder: Path, planted: str, **popen) -> subprocess.Popen:
    (folder / "test_planted.py").write_text(planted)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LLMVAL_"))}
    env["LLMVAL_SELFTEST_WAITING"] = str(folder / "waiting")
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), "--inventory", str(INVENTORY), "--reports", str(folder / "reports"),
         str(ROOT / "tests" / "hosts" / "test_reachable.py"), str(folder / "test_planted.py")],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=sigint_as_in_a_terminal, **popen)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_run_stopped_by_a_signal_replaces_the_previous_green(tmp_path, signum):
    first = _run(tmp_path, GREEN)
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 0, out
    reports = tmp_path / "reports"
    assert "GREEN" in (reports / "partial" / "status.md").read_text(), out  # a partial run

    second = _run(tmp_path, RED_THEN_WAIT)
    deadline = time.monotonic() + 120
    while not (tmp_path / "waiting").exists():
        assert second.poll() is None and time.monotonic() < deadline, second.communicate()[0]
        time.sleep(0.1)
    second.send_signal(signum)
    out, _ = second.communicate(timeout=60)
    assert second.returncode == 2, out
    status = (reports / "partial" / "status.md").read_text()
    document = json.loads((reports / "results.json").read_text())
    assert "GREEN" not in status.splitlines()[0] and "RED" in status, status[:500]
    assert document["exitstatus"] == 2, document["exitstatus"]
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in document["tests"]}
    assert outcomes["test_breaks"] == "failed", outcomes
    assert "Traceback" not in out.split("KeyboardInterrupt")[0], out
    junit = (reports / "junit.xml").read_text()
    assert "test_breaks" in junit and "selftest.killed.first" in junit, junit[:2000]
