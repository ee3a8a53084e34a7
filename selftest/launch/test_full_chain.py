"""kpro6 launch and teardown through the REAL transports (testinfra ssh, the pct backend), against stand-in
host tools on PATH (`fake_tool.py`: ssh, pct, systemctl, journalctl, nvidia-smi, fuser, pkill).

What the fake Connection tests cannot show: the command as it arrives at each hop — ssh to the Proxmox node,
then `pct exec 129 -- ...` into the container — including the pct backend's `/bin/sh -c` wrapping.
"""

from __future__ import annotations

import glob
import re
import sys
from pathlib import Path

import pytest

from llmval.inventory import load_inventory
from llmval.io.transport import connect
from llmval.launch import Stack
from selftest.launch.fakes import FakeClock, ProbeAfter, never_open
from selftest.launch.helpers import ROOT

REMOTE_DEADLINE_RE = re.compile(r"timeout -k \d+ \d+ /bin/sh -c ")
"""The transport's far-side deadline wrapper (llmval.io.transport: `timeout -k 2 <T> /bin/sh -c <command>`)."""
WRAPPED_RE = re.compile(r"timeout -k \d+ \d+ /bin/sh -c ('?)(?P<command>.*)\1$")
TOOLS = ["ssh", "pct", "systemctl", "journalctl", "nvidia-smi", "fuser", "pkill"]


def _unwrapped(line: str) -> str:
    """The hop's log line with the transport's deadline wrapper removed (that wrapper is the transport's to test)."""
    head, _, tail = line.partition(": ")
    prefix, found, wrapped = tail.partition("timeout -k ")
    if not found:
        return line
    m = WRAPPED_RE.match("timeout -k " + wrapped)
    return f"{head}: {prefix}{m['command']}" if m else line


def _stand_in_tools(folder: Path) -> Path:
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        wrapper = bin_dir / tool
        wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {ROOT / "selftest/launch/fake_tool.py"} {tool} "$@"\n')
        wrapper.chmod(0o755)
    return bin_dir


@pytest.mark.slow
def test_kpro6_commands_arrive_at_the_node_and_in_ct129_exactly_so(tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("PATH", f"{_stand_in_tools(tmp_path)}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_STATE", str(state))
    inventory = load_inventory(ROOT / "inventories" / "kpro6.toml")
    connections = {}

    def connection_to(name):
        return connections.setdefault(name, connect(inventory.host(name), inventory=inventory))

    clock = FakeClock()
    stack = Stack(inventory, connection_to, tmp_path / "launch", allow_destructive=True, say=lambda _: None,
                  probe=ProbeAfter(2), is_port_open=never_open, clock=clock, sleep=clock.sleep)
    stack.launch()
    stack.stop()
    show = "systemctl show -p NRestarts -p ActiveState -p SubState -p ExecMainStatus sglang.service"
    journal = "journalctl -u sglang.service -n 20 --no-pager -o cat --show-cursor"
    gpu_query = "nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits"
    calls = (state / "calls.log").read_text().splitlines()
    assert all(REMOTE_DEADLINE_RE.search(line) for line in calls if line.startswith("ssh:")), calls
    assert [_unwrapped(line) for line in calls] == [
        "ssh: 10.1.2.6 pct exec 129 -- systemctl is-active sglang.service",
        "pct: exec 129 -- systemctl is-active sglang.service",
        "systemctl [ct 129]: is-active sglang.service",
        "ssh: 10.1.2.6 pct exec 129 -- systemctl start sglang.service",
        "pct: exec 129 -- systemctl start sglang.service",
        "systemctl [ct 129]: start sglang.service",
        # readiness watch through the pct backend: ssh to the node, pct exec, a shell in the container
        f"ssh: 10.1.2.6 pct exec 129 -- {show}",
        f"pct: exec 129 -- {show}",
        f"systemctl [ct 129]: {show.removeprefix('systemctl ')}",
        f"ssh: 10.1.2.6 pct exec 129 -- {journal}",
        f"pct: exec 129 -- {journal}",
        f"journalctl [ct 129]: {journal.removeprefix('journalctl ')}",
        # teardown: stop the unit, kill zombie workers from the host, free /dev/nvidia*, GPUs back to idle
        "ssh: 10.1.2.6 pct exec 129 -- systemctl stop sglang.service",
        "pct: exec 129 -- systemctl stop sglang.service",
        "systemctl [ct 129]: stop sglang.service",
        "ssh: 10.1.2.6 pct exec 129 -- pkill -9 -e -f python3",
        "pct: exec 129 -- pkill -9 -e -f python3",
        "pkill [ct 129]: -9 -e -f python3",
        "ssh: 10.1.2.6 fuser -k /dev/nvidia*",
        f"fuser: -k {' '.join(sorted(glob.glob('/dev/nvidia*'))) or '/dev/nvidia*'}",  # the node's shell expands it
        f"ssh: 10.1.2.6 {gpu_query}",
        f"nvidia-smi: {gpu_query.removeprefix('nvidia-smi ')}",
    ]
    assert stack.summary.teardown_problems == []
