"""Launch and teardown with REAL local processes (stub engines: fast, no engine lock needed).

Every test ends by proving from /proc that nothing of the launch is left (`tagged_processes`, the
process group) and that the port is free.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmval.inventory import load_inventory
from llmval.io.transport import connect
from llmval.launch import (
    LAUNCH_ID_ENV,
    Crashed,
    Hung,
    PortHeld,
    PortInUse,
    Stack,
    group_members,
    port_open,
    tagged_processes,
)
from selftest.launch.helpers import ROOT, assert_nothing_left, run_until_marker, seconds_until_nothing_left, summary_of
from selftest.strategies import sigint_as_in_a_terminal

INVENTORIES = ROOT / "selftest" / "data" / "inventories"
STUB_PORT = 8337


def _stack(name: str, tmp_path: Path, **changes) -> Stack:
    inventory = load_inventory(INVENTORIES / f"launch-stub-{name}.toml")
    if changes:
        step = inventory.launch.start[0].model_copy(update=changes)
        inventory = inventory.model_copy(update={"launch": inventory.launch.model_copy(update={"start": [step]})})
    return Stack(inventory, lambda host: connect(inventory.host(host)), tmp_path / "launch", say=lambda _: None,
                 cwd=ROOT)


@pytest.mark.subprocess
def test_stub_engine_comes_up_and_teardown_leaves_nothing(tmp_path):
    stack = _stack("server", tmp_path)
    try:
        ready_s = stack.launch()
        pid = stack.processes[0].pid
        assert port_open("127.0.0.1", STUB_PORT) and group_members(pid)
    finally:
        stack.stop()
    assert ready_s < 10
    assert_nothing_left(stack.launch_id, pid, STUB_PORT)
    assert stack.summary.teardown_problems == []
    # the watchdog stood down only after teardown was done, and is gone
    assert stack.summary.watchdog["outcome"] == "stood down" and stack.watchdog.process.returncode == 0
    assert "disarmed: the suite tore the launch down itself" in stack.watchdog.log_path.read_text()


@pytest.mark.slow
def test_teardown_kills_a_child_that_left_the_process_group(tmp_path):
    stack = _stack("server", tmp_path, run=f"exec .venv/bin/python -u selftest/launch/stub_server.py {STUB_PORT} "
                                           "--orphan --ignore-term")
    try:
        stack.launch()
        orphans = [p for p in tagged_processes(stack.launch_id) if p.pgid != stack.processes[0].pid]
        assert [p.cmdline for p in orphans] == ["sleep 300"]
    finally:
        stack.stop()
    assert_nothing_left(stack.launch_id, stack.processes[0].pid, STUB_PORT)


@pytest.mark.slow
def test_engine_that_prints_then_goes_silent_is_hung_within_the_window(tmp_path):
    stack = _stack("hang", tmp_path)
    window = stack.spec.ready.no_progress_s
    started = time.monotonic()
    with pytest.raises(Hung) as caught:
        stack.launch()
    took = time.monotonic() - started
    stack.stop()
    assert window < took < window + 3
    assert "NCCL INFO Channel 00/0" in str(caught.value)
    assert_nothing_left(stack.launch_id, stack.processes[0].pid, STUB_PORT)


@pytest.mark.subprocess
def test_engine_that_exits_fails_fast_with_its_own_error(tmp_path):
    stack = _stack("crash", tmp_path)
    started = time.monotonic()
    with pytest.raises(Crashed) as caught:
        stack.launch()
    stack.stop()
    assert time.monotonic() - started < 5 < stack.spec.ready.timeout_s
    assert "exited with code 2" in str(caught.value)
    assert "engine error: api_server.py: error: unrecognized arguments: --no-such-flag" in str(caught.value)


def test_port_taken_before_launch_is_refused_and_nothing_starts(tmp_path):
    marker = tmp_path / "started"
    stack = _stack("server", tmp_path, run=f"touch {marker}")
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", STUB_PORT))
        squatter.listen()
        with pytest.raises(PortInUse) as caught:
            stack.launch()
        stack.stop()
    message = str(caught.value)
    assert f"127.0.0.1:{STUB_PORT} already accepts connections before launch" in message
    assert f"pid {os.getpid()}" in message  # names the process holding the port
    assert not marker.exists() and stack.processes == []


def _contract_run(tmp_path: Path, inventory: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "tests/serving/test_model.py::test_served_model_matches_inventory",
            *extra, "--inventory", str(inventory), "--launch", "--reports", str(tmp_path / "reports"),
            "-p", "no:xdist", "-q", "-o", "addopts=-p no:cacheprovider -p no:pytest11.testinfra"]


@pytest.mark.subprocess
def test_launch_option_runs_the_contract_and_tears_down(tmp_path):
    done = subprocess.run(_contract_run(tmp_path, INVENTORIES / "launch-stub-server.toml"), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = summary_of(tmp_path / "reports")
    assert summary["launch_to_ready_s"] is not None and summary["teardown_problems"] == []
    assert "[launch] stub ready after" in done.stdout
    assert_nothing_left(summary["launch_id"], summary["processes"][0]["pid"], STUB_PORT)


@pytest.mark.subprocess
def test_launch_failure_is_one_clear_error_and_still_tears_down(tmp_path):
    done = subprocess.run(_contract_run(tmp_path, INVENTORIES / "launch-stub-hang.toml"), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 10, done.stdout[-3000:]  # could not check: the stack never came up
    assert "--launch: the stack did not come up (Hung)" in done.stdout
    summary = summary_of(tmp_path / "reports")
    assert_nothing_left(summary["launch_id"], summary["processes"][0]["pid"], STUB_PORT)


def _what_broke(reports: Path) -> tuple[str, dict]:
    """The top of status.md (a run of one test is partial: its own under partial/) and results.json's roots."""
    status = ((reports / "partial") if (reports / "partial").is_dir() else reports).joinpath("status.md").read_text()
    return status.split("## Goal")[0], json.loads((reports / "results.json").read_text())["root_causes"]


@pytest.mark.subprocess
def test_a_launch_that_crashes_keeps_the_engines_own_words_on_every_page(tmp_path):
    """Issue 43.6: status.md said "--launch: the stack did not come up (Crashed):" and stopped at the colon."""
    done = subprocess.run(_contract_run(tmp_path, INVENTORIES / "launch-stub-crash.toml"), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 10, done.stdout[-3000:]
    words = "unrecognized arguments: --no-such-flag"
    head, roots = _what_broke(tmp_path / "reports")
    assert "--launch: the stack did not come up (Crashed)" in head and words in head, head
    assert [r["error"] for r in roots] == ["Crashed"] and words in roots[0]["observed"], roots
    block = done.stdout.split("root cause(s), what each explains under it")[1]
    assert "--launch: the stack did not come up (Crashed)" in block and words in block, block


@pytest.mark.subprocess
def test_a_launch_refused_flag_is_a_root_cause_with_its_fix_and_its_dependents_under_the_same_cause(tmp_path):
    """Issue 43.6 as the issue saw it (SGLang refusing `--attention-backend nosuch`, a stub printing argparse's
    lines): the root cause had no fix, and its 21 dependents read "could not run because hosts.reachable failed",
    a host check that never failed (the shared cause's first member). Now: the crash's fix on every page, the
    dependents under "the same cause"."""
    words = "argument --attention-backend: invalid choice: 'nosuch' (choose from 'flashinfer', 'fa3', 'triton')"
    stub = (INVENTORIES / "launch-stub-crash.toml").read_text()
    crash = "echo 'api_server.py: error: unrecognized arguments: --no-such-flag' >&2; exit 2"
    assert crash in stub
    inventory = tmp_path / "launch-bad-flag.toml"
    inventory.write_text(stub.replace(f'"echo loading; {crash}"',
                                      f'"""echo loading; echo "launch_server.py: error: {words}" >&2; exit 2"""'))
    smoke = [sys.executable, "-m", "pytest", "-m", "smoke", f"--inventory={inventory}", "--launch",
             f"--reports={tmp_path / 'reports'}", "-p", "no:xdist",
             "-o", "addopts=-p no:cacheprovider -p no:pytest11.testinfra"]
    done = subprocess.run(smoke, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 10, done.stdout[-3000:]
    head, roots = _what_broke(tmp_path / "reports")
    fix = "the engine exited while starting: its own error line above says why"
    assert words in head and f"fix: {fix}" in head, head
    assert "because `hosts.reachable` failed" not in head and "could not run because of the same cause:" in head
    assert roots[0]["error"] == "Crashed" and roots[0]["hint"].startswith(fix) and words in roots[0]["observed"]
    block = done.stdout.split("root cause(s), what each explains under it")[1]
    assert "fix: " + fix in block and "could not run because of the same cause: serving." in block, block
    assert "hosts.reachable failed" not in block and block.splitlines()[1].startswith("COULD NOT CHECK"), block


@pytest.mark.subprocess
def test_a_launch_refused_for_a_taken_port_names_the_holder_and_the_fix_on_every_page(tmp_path):
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", STUB_PORT))
        squatter.listen()
        done = subprocess.run(_contract_run(tmp_path, INVENTORIES / "launch-stub-server.toml"), cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 10, done.stdout[-3000:]
    head, roots = _what_broke(tmp_path / "reports")
    for words in ("(PortInUse)", f"127.0.0.1:{STUB_PORT} already accepts connections before launch",
                  f"pid {os.getpid()}", "Stop it, or pick a free port"):
        assert words in head and words in roots[0]["observed"], (words, head)


@pytest.mark.subprocess
def test_a_taken_port_shared_by_two_checks_is_printed_line_by_line(tmp_path):
    """The launch and the contract's own test share the cause (one root, two checks): the terminal printed its
    second line, the holder and the fix, after a literal backslash-n on the first."""
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", STUB_PORT))
        squatter.listen()
        done = subprocess.run(_contract_run(tmp_path, INVENTORIES / "launch-stub-server.toml",
                                            str(ROOT / "selftest" / "data" / "launch" / "blocking_contract.py")),
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 10, done.stdout[-3000:]
    block = done.stdout.split("root cause(s), what each explains under it")[1]
    assert "checks (PortInUse), one cause: --launch: the stack did not come up (PortInUse)" in block, block
    assert "\\n" not in block and "\n    The suite will not attach to a server it did not start" in block, block


@pytest.mark.subprocess
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_killing_the_run_mid_test_still_tears_down(tmp_path, sig):
    args = _contract_run(tmp_path, INVENTORIES / "launch-stub-server.toml",
                         str(ROOT / "selftest" / "data" / "launch" / "blocking_contract.py"))
    outcome = run_until_marker(args, tmp_path / "marker", sig)
    summary = summary_of(tmp_path / "reports")
    assert outcome.returncode == pytest.ExitCode.INTERRUPTED, outcome.output[-3000:]
    results = json.loads((tmp_path / "reports" / "results.json").read_text())["tests"]
    assert {t["nodeid"].split("::")[-1]: t["outcome"] for t in results}["test_served_model_matches_inventory[stub]"] \
        == "passed"
    assert summary["teardown_s"] is not None and summary["teardown_problems"] == [], outcome.output[-3000:]
    assert_nothing_left(summary["launch_id"], summary["processes"][0]["pid"], STUB_PORT)
    assert summary["watchdog"]["outcome"] == "stood down"  # the suite's own teardown did it; the watchdog did not fire


@pytest.mark.subprocess
@pytest.mark.parametrize("engine", ["plain", "orphan-ignoring-term"])
def test_sigkilled_run_leaves_nothing_of_its_launch(tmp_path, engine, record_property):
    """SIGKILL of pytest runs no teardown at all; the launch watchdog ends the launch's process groups (and a
    child that made its own session and ignores SIGTERM: SIGKILL after term_grace_s = 2 s), leaves a bystander
    alone, and exits itself."""
    inventory = tmp_path / "stub.toml"
    flags = " --orphan --ignore-term" if engine == "orphan-ignoring-term" else ""
    inventory.write_text((INVENTORIES / "launch-stub-server.toml").read_text()
                         .replace("stub_server.py 8337", f"stub_server.py 8337{flags}"))
    bystander = subprocess.Popen(["sleep", "120"], start_new_session=True)
    summary = {}
    try:
        killed = run_until_marker(_contract_run(tmp_path, inventory, str(ROOT / "selftest" / "data" / "launch" /
                                                                         "blocking_contract.py")),
                                  tmp_path / "marker", signal.SIGKILL)
        summary = summary_of(tmp_path / "reports")
        assert killed.returncode == -signal.SIGKILL and summary["teardown_s"] is None  # no teardown ran
        took = seconds_until_nothing_left(summary["launch_id"], [summary["processes"][0]["pgid"]], STUB_PORT,
                                          within_s=12)
        assert bystander.poll() is None, "the watchdog killed a process outside the launch"
    finally:
        bystander.kill()
        bystander.wait()
        for leftover in tagged_processes(summary["launch_id"]) if summary else []:
            os.kill(leftover.pid, signal.SIGKILL)  # without a watchdog the stand-in engine stays (it did before)
    assert seconds_until_nothing_left("-", [summary["watchdog"]["pid"]], STUB_PORT, within_s=2) < 2  # it exits too
    log = Path(summary["watchdog"]["log"]).read_text()
    assert f"the suite (pid {summary['suite_pid']}) is gone and did not tear down" in log, log
    assert f"nothing of launch {summary['launch_id']} left after" in log, log
    assert ("SIGKILL process group" in log) == (engine == "orphan-ignoring-term"), log
    record_property("nothing_left_after_sigkill_s", took)
    print(f"\n{engine}: nothing of the launch left {took} s after SIGKILL of pytest; watchdog log:\n{log}")


def _started_processes(reports: Path) -> list:
    """The processes the launch's summary.json lists as started (none yet, or no summary: [])."""
    for summary in (reports / "launch").glob("*/summary.json"):
        try:
            return json.loads(summary.read_text()).get("processes", [])
        except ValueError:  # read while the launch rewrote it
            return []
    return []


@pytest.mark.subprocess
def test_sigterm_during_launch_still_tears_down(tmp_path):
    inventory = INVENTORIES / "launch-stub-server.toml"
    text = inventory.read_text().replace("stub_server.py 8337", "stub_server.py 8337 --start-delay 60")
    slow = tmp_path / "slow.toml"
    slow.write_text(text)
    run = subprocess.Popen(_contract_run(tmp_path, slow), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    try:
        deadline = time.monotonic() + 60
        while not _started_processes(tmp_path / "reports"):  # the watchdog's summary comes before the process
            assert time.monotonic() < deadline, "the launch never started"
            time.sleep(0.2)
        run.send_signal(signal.SIGTERM)
        output, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    summary = summary_of(tmp_path / "reports")
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert summary["teardown_s"] is not None, output[-3000:]
    assert_nothing_left(summary["launch_id"], summary["processes"][0]["pid"], STUB_PORT)


@pytest.mark.subprocess
def test_engine_left_over_by_a_killed_run_is_named_with_the_fix(tmp_path):
    old = subprocess.Popen([sys.executable, "-u", "selftest/launch/stub_server.py", str(STUB_PORT), "--start-delay",
                            "0"], cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, LAUNCH_ID_ENV: "0ldrun"})
    try:
        deadline = time.monotonic() + 30
        while not port_open("127.0.0.1", STUB_PORT):
            assert time.monotonic() < deadline and old.poll() is None, "stand-in leftover never listened"
            time.sleep(0.1)
        stack = _stack("server", tmp_path)
        with pytest.raises(PortInUse) as caught:
            stack.launch()
        stack.stop()
    finally:
        os.killpg(old.pid, signal.SIGKILL)
        old.wait(timeout=10)
    assert "left over from an earlier --launch run (launch id 0ldrun" in str(caught.value)
    assert f"kill -TERM -- -{old.pid}" in str(caught.value)
    assert stack.processes == []


def test_gpu_sigkill_script_passes_on_the_stub_and_names_what_it_checked(tmp_path):
    """scripts/gpu/launch_sigkill.sh (the H200 proof of the SIGKILL case) dry-run on the stub engine: it kills
    pytest once summary.json says ready, then finds the group, the tagged processes and the port empty and the
    watchdog gone by its own /proc reads."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "LLMVAL_GPU_TMP": str(tmp_path),
           "OUT": str(tmp_path / "out"), "LLMVAL_SELFTEST_MARKER": str(tmp_path / "marker")}
    done = subprocess.run(["bash", "scripts/gpu/launch_sigkill.sh", "dry", str(INVENTORIES / "launch-stub-server.toml"),
                           "tests/hosts/test_reachable.py", "selftest/data/launch/blocking_contract.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    result = (tmp_path / "runs" / "dry" / "result.txt").read_text()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "PASS: seconds after kill -9 until empty: process groups" in result, result
    assert "GPU compute apps (no nvidia-smi)" in result  # said, not silently passed, where there is no GPU
    assert "is gone and did not tear down" in (tmp_path / "runs" / "dry" / "watchdog.log").read_text()
    assert (tmp_path / "out" / "dry.tgz").stat().st_size > 0
    assert not port_open("127.0.0.1", STUB_PORT)


def _daemon_inventory(tmp_path: Path) -> Path:
    """The stub engine started by a foreground step as a daemon of its own (setsid, no launch tag: what systemd or
    docker would run) and stopped by the inventory's stop step, which also counts its runs in `stopped`."""
    inventory = tmp_path / "daemon.toml"
    head, _, _ = (INVENTORIES / "launch-stub-server.toml").read_text().partition("[launch]")
    start = (f"setsid .venv/bin/python -u selftest/launch/stub_server.py {STUB_PORT} > {tmp_path}/daemon.log 2>&1 "
             f"< /dev/null & echo $! > {tmp_path}/daemon.pid")
    inventory.write_text(head + f'''[launch]
term_grace_s = 2

[[launch.start]]
host = "localhost"
name = "stub daemon"
run = "{start}"

[[launch.stop]]
host = "localhost"
name = "stop the stub daemon"
run = "kill $(cat {tmp_path}/daemon.pid); echo stopped >> {tmp_path}/stopped"
timeout_s = 20

[launch.ready]
endpoint = "stub"
timeout_s = 30
no_progress_s = 10
interval_s = 0.25
''')
    return inventory


@pytest.mark.subprocess
def test_sigkilled_run_still_runs_the_stop_steps_of_a_daemon_it_did_not_spawn(tmp_path):
    """A start step that hands the engine to a daemon (kpro6's systemctl start, the Sparks' docker run -d): after
    SIGKILL of pytest the watchdog runs the inventory's stop steps, once, and the port is freed."""
    args = _contract_run(tmp_path, _daemon_inventory(tmp_path), str(ROOT / "selftest" / "data" / "launch" /
                                                                    "blocking_contract.py"))
    daemon = None
    try:
        killed = run_until_marker(args, tmp_path / "marker", signal.SIGKILL)
        daemon = int((tmp_path / "daemon.pid").read_text())
        summary = summary_of(tmp_path / "reports")
        assert killed.returncode == -signal.SIGKILL and summary["teardown_s"] is None
        took = seconds_until_nothing_left("-", [daemon], STUB_PORT, within_s=30)
        assert summary["watchdog"]["stop_steps_if_killed"] is True
        seconds_until_nothing_left("-", [summary["watchdog"]["pid"]], STUB_PORT, within_s=30)  # and it exits
    finally:
        if daemon and group_members(daemon):
            os.killpg(daemon, signal.SIGKILL)  # without the watchdog's stop steps the daemon stays (it did before)
    assert (tmp_path / "stopped").read_text() == "stopped\n"
    log_dir = next((tmp_path / "reports" / "launch").glob("*/"))
    log = (log_dir / "watchdog.log").read_text()
    assert "running the inventory's stop steps" in log and "the stop steps exited 0" in log, log
    after = json.loads((log_dir / "after-kill" / "summary.json").read_text())
    assert after["launch_id"] == summary["launch_id"] and after["teardown_problems"] == [], after
    assert [(s["label"], s["outcome"]) for s in after["steps"]] == [("stop the stub daemon", "ok")]
    print(f"\ndaemon stand-in: stopped and port free {took} s after SIGKILL of pytest\n{log}")


@pytest.mark.subprocess
def test_normal_teardown_runs_the_stop_steps_once_and_the_watchdog_stands_down(tmp_path):
    done = subprocess.run(_contract_run(tmp_path, _daemon_inventory(tmp_path)), cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = summary_of(tmp_path / "reports")
    assert summary["watchdog"]["outcome"] == "stood down" and summary["teardown_problems"] == []
    time.sleep(1)  # a watchdog that fired anyway would have run the stop steps a second time by now
    assert (tmp_path / "stopped").read_text() == "stopped\n"
    assert "disarmed" in Path(summary["watchdog"]["log"]).read_text()
    assert not port_open("127.0.0.1", STUB_PORT)


@pytest.mark.subprocess
def test_a_second_launch_of_the_endpoint_is_refused_naming_the_first(tmp_path):
    """Issue 42.9: two --launch runs on one port; the second said "ready" and judged the first's engine. The first
    holds the endpoint's lock until its teardown is done: the second is refused before any step, naming it."""
    first, second = _stack("server", tmp_path / "a"), _stack("server", tmp_path / "b")
    try:
        first.launch()
        with pytest.raises(PortHeld) as caught:
            second.launch()
        second.stop()
    finally:
        first.stop()
    message = str(caught.value)
    assert f"127.0.0.1:{STUB_PORT} is held by another --launch run (pid {os.getpid()}, launch id {first.launch_id}, " \
           f"deployment launch-stub-server, since " in message and f"logs {tmp_path / 'a' / 'launch'}" in message
    assert second.processes == [] and second.summary.steps == []  # nothing of the second ran
    assert_nothing_left(first.launch_id, first.processes[0].pid, STUB_PORT)
    third = _stack("server", tmp_path / "c")  # the lock went with the first's teardown
    try:
        third.launch()
    finally:
        third.stop()
    assert_nothing_left(third.launch_id, third.processes[0].pid, STUB_PORT)


@pytest.mark.subprocess
@pytest.mark.parametrize("tag", ["0ther1aunch", None])
def test_a_ready_answer_from_a_server_this_launch_did_not_start_is_not_judged(tmp_path, tag):
    """The lock is this machine's and dies with its holder (a SIGKILLed run's engine lives on until its watchdog
    ends it), and `port_must_be_free = false` skips the port check: the listener that answers ready must then be
    one of this launch's own processes. Here this launch's engine never binds (`sleep`) while another answers."""
    inventory = load_inventory(INVENTORIES / "launch-stub-server.toml")
    launch = inventory.launch.model_copy(update={
        "start": [inventory.launch.start[0].model_copy(update={"run": "exec sleep 30"})],
        "ready": inventory.launch.ready.model_copy(update={"port_must_be_free": False})})
    inventory = inventory.model_copy(update={"launch": launch})
    stack = Stack(inventory, lambda host: connect(inventory.host(host)), tmp_path / "launch", say=lambda _: None,
                  cwd=ROOT)
    env = {k: v for k, v in os.environ.items() if k != LAUNCH_ID_ENV} | ({LAUNCH_ID_ENV: tag} if tag else {})
    other = subprocess.Popen([sys.executable, "-u", "selftest/launch/stub_server.py", str(STUB_PORT)], cwd=ROOT,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not port_open("127.0.0.1", STUB_PORT) and time.monotonic() < deadline:
            time.sleep(0.1)
        with pytest.raises(PortHeld) as caught:
            stack.launch()
        stack.stop()
    finally:
        other.terminate()
        other.wait(timeout=10)
    message = str(caught.value)
    assert f"http://127.0.0.1:{STUB_PORT}/health answers, but what listens on 127.0.0.1:{STUB_PORT} is not this " \
           f"launch's (pid {other.pid} " in message
    assert (f"started by --launch run {tag})" if tag else "started by no --launch run)") in message
    assert f"this launch started 'stub-server' (pid {stack.processes[0].pid}), none of which listens there" in message
    assert stack.summary.launch_to_ready_s is None and "is not this launch's" in stack.summary.launch_error
    assert_nothing_left(stack.launch_id, stack.processes[0].pid, STUB_PORT)


@pytest.mark.subprocess
def test_a_second_launch_run_on_the_port_is_could_not_check_naming_the_first(tmp_path):
    """The issue's case through pytest: run A (`--launch`) is mid-test with its stub up; run B (`--launch`, the same
    inventory) said "ready" and judged A's engine. B now ends at once, could not check, naming A's run."""
    first = _contract_run(tmp_path / "a", INVENTORIES / "launch-stub-server.toml",
                          str(ROOT / "selftest" / "data" / "launch" / "blocking_contract.py"))
    marker = tmp_path / "marker"
    run = subprocess.Popen(first, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "LLMVAL_SELFTEST_MARKER": str(marker)},
                           preexec_fn=sigint_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert run.poll() is None and time.monotonic() < deadline, "run A never reached its blocking test"
            time.sleep(0.2)
        second = subprocess.run(_contract_run(tmp_path / "b", INVENTORIES / "launch-stub-server.toml"), cwd=ROOT,
                                capture_output=True, text=True, timeout=120)
    finally:
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=90)
    held = summary_of(tmp_path / "a" / "reports")
    assert second.returncode == 10, second.stdout[-3000:]  # could not check
    assert "--launch: the stack did not come up (PortHeld)" in second.stdout
    assert f"is held by another --launch run (pid {run.pid}, launch id {held['launch_id']}, " in second.stdout
    assert "[launch] stub ready after" not in second.stdout
    refused = summary_of(tmp_path / "b" / "reports")
    assert refused["processes"] == [] and refused["steps"] == []  # B started nothing
    assert_nothing_left(held["launch_id"], held["processes"][0]["pid"], STUB_PORT)
