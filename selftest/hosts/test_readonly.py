"""Nothing a smoke or nightly host check sends changes a host: every command is a rendering of one of the
read-only constants in llmval.hostfacts, checked on every command of the recorded and replayed runs."""

from __future__ import annotations

import ast
import json

import pytest

from llmval.hostfacts import READ_ONLY, is_read_only
from selftest.strategies import ROOT

from ._contract import REPLAYS

CONTRACT = ROOT / "tests" / "hosts"


def _recorded_commands() -> list[str]:
    return [json.loads(line)["command"] for path in sorted(REPLAYS.glob("*/commands*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def test_every_replayed_command_is_read_only():
    commands = _recorded_commands()
    assert len(commands) > 50
    assert [c for c in commands if not is_read_only(c)] == []


def test_every_read_only_template_is_used_by_some_replay_or_live_run():
    used = {c.name for c in READ_ONLY for cmd in _recorded_commands() if c.pattern.fullmatch(cmd)}
    # process env, file NCCL logs, plain `ray list`, docker logs and the per-pid cgroup of a non-allowed holder
    # are exercised by the stand-in live runs (test_live.py) or the local inventory instead
    assert set(c.name for c in READ_ONLY) - used <= {"process-env", "nccl-docker", "ray-nodes"}


@pytest.mark.parametrize("command", [
    "fuser -k /dev/nvidia*",
    "cat /etc/pve/lxc/129.conf; reboot",
    "cat /etc/pve/lxc/129.conf && pct stop 129",
    "systemctl restart sglang.service",
    "systemctl show -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Environment x | sh",
    "docker rm -f vllm-glm-4.7-flash",
    "docker exec vllm-qwen35 ray stop --force",
    "docker exec vllm-qwen35 ray list nodes --format json > /etc/passwd",
    "pct exec 129 -- pkill -9 -f python3",
    "sha256sum -- /models/a `rm -rf /`",
    "grep -hE 'NCCL (INFO|WARN)' /var/log/x.log | tee /etc/motd",
    "nvidia-smi -r",
    "nvidia-smi -pm 1",
    "nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader; nvidia-smi -r",
    "nvidia-smi --query-gpu=pci.bus_id,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,"
    "clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,"
    "clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost --format=csv,noheader -pm 0",
    "journalctl -k -b --no-pager -g 'NVRM: Xid|Linux version' --vacuum-time=1s",
    "journalctl --rotate",
    "dmesg -C",
    "dmesg 2>&1 | grep -E 'NVRM: Xid|Linux version|dmesg: ' > /dev/kmsg",
])
def test_changing_commands_are_not_on_the_allow_list(command):
    assert not is_read_only(command)


def test_a_hostile_inventory_value_is_quoted_not_run():
    from llmval.hostfacts import CONTAINER_INSPECT, NCCL_FILE

    rendered = CONTAINER_INSPECT.render(name="x; reboot")
    assert rendered == "docker inspect --type container 'x; reboot'" and is_read_only(rendered)
    with pytest.raises(ValueError, match="may only hold"):
        NCCL_FILE.render(path="/var/log/x.log; reboot")


def _run_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run":
            yield node


@pytest.mark.parametrize("path", sorted(CONTRACT.glob("test_*.py")), ids=lambda p: p.name)
def test_contract_tests_send_only_command_constants(path):
    """A host test that runs a command directly must pass `<CONSTANT>.render(...)`, never a literal."""
    for call in _run_calls(ast.parse(path.read_text())):
        first = call.args[0] if call.args else None
        assert isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) \
            and first.func.attr == "render" and isinstance(first.func.value, ast.Name) \
            and first.func.value.id.isupper(), f"{path.name}:{call.lineno} runs something that is not a constant"
