"""--launch with the REAL local engine (vLLM on CPU, port 8336), under the machine-wide engine lock.

Few and bounded: three full launches (smoke passes, then the run is killed mid-test with SIGINT, resp. SIGTERM;
or pytest is SIGKILLed, so that no teardown runs and the launch watchdog must end the engine) and one broken
flag (exits at argument parsing, no model load); the normal end-of-run teardown is the same
`Stack.stop()` and is covered with a stub engine in test_local.py. Each asserts from /proc that nothing of the
launch is left and that the port is free; the timings are printed (-s) and kept as junit properties.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest

from llmval.inventory import load_inventory
from llmval.io.transport import connect
from llmval.launch import Crashed, Stack, tagged_processes
from selftest.launch.helpers import (
    ROOT,
    assert_nothing_left,
    left_of,
    run_until_marker,
    seconds_until_nothing_left,
    summary_of,
)

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


def test_sigkilled_run_leaves_no_engine_process_and_a_free_port(tmp_path, engine_lock, record_property):
    """kill -9 of pytest once the engine is ready and a test runs (a CI job killed at its limit): nothing tears
    down, so the launch watchdog must end the API server and its EngineCore (same process group) within the
    inventory's term_grace_s (15 s) plus the SIGKILL wait, and free the port."""
    args = _args(tmp_path, "launch-engine.toml", "tests/hosts/test_reachable.py",
                 str(ROOT / "selftest" / "data" / "launch" / "blocking_contract.py"))
    killed = run_until_marker(args, tmp_path / "marker", signal.SIGKILL, wait_s=900)
    summary = summary_of(tmp_path / "reports")
    assert killed.returncode == -signal.SIGKILL and summary["teardown_s"] is None  # no teardown ran
    engine_pgid = summary["processes"][0]["pgid"]
    at_kill = left_of(summary["launch_id"], [engine_pgid], ENGINE_PORT)
    assert any("EngineCore" in line or "api_server" in line for line in at_kill), at_kill  # there was an engine
    took = seconds_until_nothing_left(summary["launch_id"], [engine_pgid], ENGINE_PORT, within_s=25)
    seconds_until_nothing_left("-", [summary["watchdog"]["pid"]], ENGINE_PORT, within_s=5)  # the watchdog exits
    log = Path(summary["watchdog"]["log"]).read_text()
    assert f"nothing of launch {summary['launch_id']} left after" in log, log
    record_property("nothing_left_after_sigkill_s", took)
    print(f"\nreal engine, SIGKILL of pytest: launch-to-ready {summary['launch_to_ready_s']} s, nothing left "
          f"{took} s after the kill; at the kill: {at_kill}\nwatchdog log:\n{log}")


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
