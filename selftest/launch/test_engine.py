"""--launch with the REAL local engine (vLLM on CPU, port 8336), under the machine-wide engine lock.

Few and bounded: two full launches (smoke passes, then the run is killed mid-test with SIGINT, resp. SIGTERM)
and one broken flag (exits at argument parsing, no model load); the normal end-of-run teardown is the same
`Stack.stop()` and is covered with a stub engine in test_local.py. Each asserts from /proc that nothing of the
launch is left and that the port is free; the timings are printed (-s) and kept as junit properties.
"""

from __future__ import annotations

import json
import signal
import sys
import time

import pytest

from llmval.inventory import load_inventory
from llmval.io.transport import connect
from llmval.launch import Crashed, Stack, tagged_processes
from selftest.launch.helpers import ROOT, assert_nothing_left, run_until_marker, summary_of

pytestmark = pytest.mark.engine
INVENTORIES = ROOT / "selftest" / "data" / "inventories"
ENGINE_PORT = 8336
SMOKE = ["tests/serving/test_model.py", "tests/hosts/test_reachable.py"]


def _args(tmp_path, inventory: str, *paths: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *paths, "--inventory", str(INVENTORIES / inventory),
            "--launch", "--reports", str(tmp_path / "reports"), "-p", "no:xdist", "-q"]


def _outcomes(reports_dir) -> dict[str, str]:
    return {t["nodeid"].split("::")[-1]: t["outcome"]
            for t in json.loads((reports_dir / "results.json").read_text())["tests"]}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_launch_smoke_then_kill_mid_test_tears_the_real_engine_down(tmp_path, engine_lock, sig, record_property):
    """--launch brings the real engine up, the smoke checks pass, then the run is killed while a test runs:
    teardown still ends every engine process and frees the port (one engine start per signal)."""
    args = _args(tmp_path, "launch-engine.toml", *SMOKE, str(ROOT / "selftest" / "data" / "launch" /
                                                              "blocking_contract.py"))
    killed = run_until_marker(args, tmp_path / "marker", sig, wait_s=900)
    summary = summary_of(tmp_path / "reports")
    assert killed.returncode == pytest.ExitCode.INTERRUPTED, killed.output[-4000:]
    smoke = {name: outcome for name, outcome in _outcomes(tmp_path / "reports").items()
             if not name.startswith("test_still_running")}
    assert smoke and set(smoke.values()) == {"passed"}, smoke
    assert summary["teardown_problems"] == [] and summary["leftover_processes"] == [], killed.output[-4000:]
    assert_nothing_left(summary["launch_id"], summary["processes"][0]["pid"], ENGINE_PORT)
    record_property("launch_to_ready_s", summary["launch_to_ready_s"])
    record_property("teardown_s", summary["teardown_s"])
    record_property("exit_after_signal_s", killed.exit_after_signal_s)
    print(f"\nreal engine, {sig.name} mid-test: launch-to-ready {summary['launch_to_ready_s']} s, smoke {smoke}, "
          f"teardown {summary['teardown_s']} s, run exited {killed.exit_after_signal_s} s after the signal; "
          f"left running: {tagged_processes(summary['launch_id'])}")


def test_broken_engine_flag_fails_fast_with_the_engines_own_error(tmp_path, engine_lock, record_property):
    inventory = load_inventory(INVENTORIES / "launch-engine-broken-flag.toml")
    stack = Stack(inventory, lambda host: connect(inventory.host(host)), tmp_path / "launch", say=lambda _: None,
                  cwd=ROOT)
    started = time.monotonic()
    try:
        with pytest.raises(Crashed) as caught:
            stack.launch()
    finally:
        stack.stop()
    took = time.monotonic() - started
    assert took < inventory.launch.ready.no_progress_s < inventory.launch.ready.timeout_s
    assert "engine error:" in str(caught.value) and "--no-such-flag" in str(caught.value)
    assert_nothing_left(stack.launch_id, stack.processes[0].pid, ENGINE_PORT)
    record_property("broken_flag_failed_after_s", round(took, 1))
    print(f"\nbroken flag: failed after {took:.1f} s with:\n{caught.value}")
