"""The host contract with REAL processes on this machine: stand-in hosts (local transport, fake nvidia-smi and
docker in their PATH, real ip/fuser/find/sha256sum), one of them with an nvidia-smi that hangs."""

from __future__ import annotations

import json
import os
import time

import pytest

from llmval.core.errors import CommandTimeout
from llmval.hostfacts import is_read_only
from llmval.inventory import HostSpec
from llmval.io.transport import connect, control_dir
from llmval.launch import live_process

from ._contract import not_passed, run_hosts
from .standin import make_standins, started_hangs

pytest_plugins = ["pytester"]

TIMEOUT_S = 3


def _leftover_hangs(root) -> list[int]:
    """The hangs this test started that are still alive 3 s on (the kill is immediate; the grace is for a loaded CI)."""
    started = started_hangs(root)
    assert started, "the hung stand-in's nvidia-smi never ran"
    deadline = time.monotonic() + 3
    while (alive := [pid for pid in started if live_process(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


@pytest.mark.parametrize("parallel", [("-n", "2"), ("-p", "no:xdist")], ids=["xdist", "threads"])
def test_hung_nvidia_smi_fails_its_host_within_the_timeout_while_others_pass(pytester, tmp_path, parallel):
    inventory = make_standins(tmp_path, ["ok-a", "hung", "ok-b"], hang=frozenset({"hung"}), timeout_s=TIMEOUT_S)
    started = time.monotonic()
    result, outcomes = run_hosts(pytester, "--inventory", str(inventory), *parallel, "--record", str(tmp_path / "rec"))
    wall_s = time.monotonic() - started
    failed = not_passed(outcomes)
    assert failed and all("[hung]" in k for k in failed), result.stdout.str()[-3000:]
    assert {k.split("[")[0] for k in failed} >= {"test_gpu_count_matches_inventory", "test_driver_at_least_minimum",
                                                  "test_cuda_version_matches_inventory"}
    for message in failed.values():
        assert "CommandTimeout" in message and f"no answer within {TIMEOUT_S} s" in message
    timings = {n: t["duration_s"] for n, t in _results(pytester).items()}
    assert max(timings[n] for n in timings if "[hung]" in n) < TIMEOUT_S + 2
    healthy = [n for n, (o, _) in outcomes.items() if "[ok-" in n or "@ok-a+hung+ok-b" in n]
    assert healthy and all(outcomes[n][0] in {"passed", "skipped"} for n in healthy)
    assert not _leftover_hangs(tmp_path), "the hung nvidia-smi survived its timeout"
    # every command the run sent is one of the read-only constants
    sent = [json.loads(line)["command"] for path in (tmp_path / "rec").glob("commands-*.jsonl")
            for line in path.read_text().splitlines()]
    assert len(sent) >= 20 and [c for c in sent if not is_read_only(c)] == []
    assert wall_s < 240


def _results(pytester) -> dict:
    document = json.loads((pytester.path / "reports" / "results.json").read_text())
    return {t["nodeid"]: t for t in document["tests"]}


def test_parallel_run_with_xdist_matches_a_serial_run(pytester, tmp_path):
    """Under workers (`-n auto` would keep 3 hosts in one process: fixtures/fleet.py auto_workers)."""
    inventory = make_standins(tmp_path, ["p1", "p2", "p3"], timeout_s=20)
    _, serial = run_hosts(pytester, "--inventory", str(inventory), "-p", "no:xdist", "-m", "smoke")
    _, parallel = run_hosts(pytester, "--inventory", str(inventory), "-n", "3", "-m", "smoke")
    assert not_passed(serial) == {} and not_passed(parallel) == {}
    assert {n: o for n, (o, _) in serial.items()} == {n: o for n, (o, _) in parallel.items()}
    assert sum(o == "passed" for o, _ in parallel.values()) >= 3 * 8


@pytest.mark.slow
def test_connection_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "still-running"
    connection = connect(HostSpec(name="me", platform="p", timeout_s=1))
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"\[me\] no answer within 1 s"):
        connection.run_step(f"(sleep 5; touch {marker}) & sleep 30")
    assert time.monotonic() - started < 3
    time.sleep(5.5)  # the background child would have touched the marker by now, had it survived
    assert not marker.exists()


def test_ssh_and_pct_transports_quote_through_to_the_container(tmp_path, monkeypatch):
    """STAND-IN for a Proxmox node: `ssh` and `pct` in PATH are scripts (ssh runs its last argument with
    `sh -c` here; pct runs `sh -c` as `pct exec` would inside the container). This proves the command line
    the transports build and its quoting, not OpenSSH or Proxmox themselves."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text('#!/bin/sh\nfor last; do :; done\necho "$*" >> "$(dirname "$0")/ssh.log"\n'
                                 'exec sh -c "$last"\n')
    (bin_dir / "pct").write_text('#!/bin/sh\n[ "$1" = exec ] && [ "$2" = 129 ] && [ "$3" = -- ] || exit 99\n'
                                 'shift 3\nexport IN_CT=129\nexec "$@"\n')
    for tool in ("ssh", "pct"):
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    from llmval.inventory import parse_inventory

    inventory = parse_inventory({"deployment": {"name": "x", "kind": "lab", "goal": "g"}, "hosts": [
        {"name": "node", "platform": "p", "transport": {"kind": "ssh", "address": "127.0.0.1"}, "timeout_s": 5},
        {"name": "ct", "platform": "p", "transport": {"kind": "pct", "via": "node", "container": 129}}]})
    tricky = "printf '%s|%s\\n' \"$IN_CT\" 'it''s $HOME; \"quoted\"'"
    node = connect(inventory.host("node"), inventory=inventory).run_step(tricky)
    ct = connect(inventory.host("ct"), inventory=inventory).run_step(tricky)
    assert node.stdout == "|its $HOME; \"quoted\"\n"
    assert ct.stdout == "129|its $HOME; \"quoted\"\n"
    log = (bin_dir / "ssh.log").read_text()
    assert f"ControlPath={control_dir()}/%C" in log and "BatchMode=yes" in log
    assert control_dir().stat().st_mode & 0o777 == 0o700  # a private folder, not world-writable /tmp itself
    assert "pct exec 129 -- timeout -k 2 20 /bin/sh -c" in log and "timeout -k 2 5 /bin/sh -c" in log
    (bin_dir / "ssh").write_text("#!/bin/sh\necho 'ssh: connect to host 127.0.0.1 port 22: Connection refused' >&2\n"
                                 "exit 255\n")
    from llmval.core.errors import HostUnreachable

    with pytest.raises(HostUnreachable, match=r"\[ct\] ssh failed \(rc 255\).*Connection refused"):
        connect(inventory.host("ct"), inventory=inventory).run_step("true")


@pytest.mark.engine
def test_local_default_inventory_host_checks_pass_or_skip(pytester, live_engine):
    """The embedded local inventory (one CPU host, no GPU) with its engine up: host checks pass or skip
    cleanly, none errors. Its env check reads the real engine's process environment."""
    result, outcomes = run_hosts(pytester, "--inventory", str(live_engine), in_repo_root=True)
    assert not_passed(outcomes) == {}, result.stdout.str()[-3000:]
    skipped = [m for o, m in outcomes.values() if o == "skipped"]
    assert any("no host in the inventory declares gpus" in m for m in skipped)


