"""Shared by the launch self-tests: run a --launch contract run, kill it at a chosen moment, prove cleanliness."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from llmval.launch import group_members, port_open, tagged_processes
from selftest.strategies import sigint_as_in_a_terminal

ROOT = Path(__file__).resolve().parents[2]


def summary_of(reports_dir: Path) -> dict:
    """The summary.json of the one launch made into `reports_dir`."""
    found = sorted((reports_dir / "launch").glob("*/summary.json"))
    assert len(found) == 1, f"expected one launch under {reports_dir}, found {found}"
    return json.loads(found[0].read_text())


def assert_nothing_left(launch_id: str, pgid: int, port: int) -> None:
    """No process carrying the launch's tag, none in its process group, and the port refuses connections."""
    __tracebackhide__ = True
    assert tagged_processes(launch_id) == [], f"processes of launch {launch_id} still running"
    assert group_members(pgid) == [], f"process group {pgid} still has members"
    assert not port_open("127.0.0.1", port), f"port {port} still accepts connections"


def left_of(launch_id: str, pgids: list[int], port: int) -> list[str]:
    """What is still there of a launch: tagged processes, members of its process groups, a listener on `port`."""
    left = [f"tagged: {p}" for p in tagged_processes(launch_id)]
    left += [f"in group {g}: {p}" for g in pgids for p in group_members(g)]
    return left + ([f"port {port} still accepts connections"] if port_open("127.0.0.1", port) else [])


def seconds_until_nothing_left(launch_id: str, pgids: list[int], port: int, *, within_s: float) -> float:
    """Poll until nothing of the launch is left (see `left_of`); the seconds it took, or fail naming what stayed."""
    __tracebackhide__ = True
    started = time.monotonic()
    while left := left_of(launch_id, pgids, port):
        assert time.monotonic() - started < within_s, f"still there {within_s:g} s later: {left}"
        time.sleep(0.1)
    return round(time.monotonic() - started, 2)


@dataclass
class Killed:
    returncode: int
    output: str
    exit_after_signal_s: float
    """From sending the signal to the run's exit (teardown included)."""


def run_until_marker(args: list[str], marker: Path, sig: signal.Signals, *, wait_s: float = 120) -> Killed:
    """Start the run, wait until `marker` exists (a test is running), send `sig` to pytest, wait for its exit."""
    run = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "LLMVAL_SELFTEST_MARKER": str(marker)},
                           preexec_fn=sigint_as_in_a_terminal)
    try:
        deadline = time.monotonic() + wait_s
        while not marker.exists():
            if run.poll() is not None or time.monotonic() > deadline:
                output = run.communicate(timeout=30)[0]
                raise AssertionError(f"the run never reached the blocking test (rc {run.returncode}):\n"
                                     f"{output[-3000:]}")
            time.sleep(0.2)
        sent = time.monotonic()
        run.send_signal(sig)
        output, _ = run.communicate(timeout=90)
        return Killed(run.returncode, output, round(time.monotonic() - sent, 2))
    finally:
        if run.poll() is None:
            run.kill()
