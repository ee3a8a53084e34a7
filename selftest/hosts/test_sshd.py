"""The host contract over REAL ssh: OpenSSH servers in network namespaces stand in for remote hosts.

Node 1 is a healthy "Proxmox node": its PATH has a fake `nvidia-smi` (printing the REAL H200 captures) and a
fake `pct` (STAND-IN for Proxmox: `pct exec 129 -- CMD...` runs CMD with a container PATH whose nvidia-smi
also prints the real captures). Node 2's nvidia-smi hangs. 10.251.1.3 answers nothing (no such neighbour).
Proves: ssh + pct transports with real sshd and ControlMaster, a hung remote command failing within its
timeout and being killed on the far side too, and an unreachable host failing fast — all in one run.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

import pytest

from llmval.launch import live_process
from selftest.strategies import ROOT

from . import netns
from ._contract import not_passed, run_hosts

pytest_plugins = ["pytester"]

REAL = ROOT / "selftest" / "data" / "real" / "h200x2"
HANG_MARKER = "llmval-sshd-hang"
SMI = ("#!/bin/sh\ncase \"$*\" in\n  *--query-gpu=*) cat {csv} ;;\n  \"-q -x\") cat {xml} ;;\n"
       "  *) exit 2 ;;\nesac\n").format(csv=shlex.quote(str(REAL / "nvidia-smi-query-short.csv")),
                                       xml=shlex.quote(str(REAL / "nvidia-smi-q.xml")))

pytestmark = [pytest.mark.netns, pytest.mark.skipif(netns.available() is not None, reason=str(netns.available()))]


def _tool(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(0o755)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    base = tmp_path_factory.mktemp("sshd")
    key, config = netns.client_files(base)
    good, hung = netns.SshNode(1, base / "node1"), netns.SshNode(2, base / "node2")
    try:
        for node in (good, hung):
            node.start(key)
        _tool(good.bin_dir, "nvidia-smi", SMI)
        ct_bin = good.folder / "ct129-bin"
        _tool(ct_bin, "nvidia-smi", SMI)
        _tool(good.bin_dir, "pct", f'#!/bin/sh\n[ "$1" = exec ] && [ "$2" = 129 ] && [ "$3" = -- ] || exit 2\n'
                                   f'shift 3\nexport PATH={ct_bin}:$PATH IN_CT=129\nexec "$@"\n')
        pids = hung.folder / "hang.pids"
        _tool(hung.bin_dir, "nvidia-smi", f"#!/bin/bash\necho $$ >> {pids}\nexec -a {HANG_MARKER} sleep 600\n")
        for node in (good, hung):
            netns.wait_for_ssh(node, key, config)
        yield {"good": good, "hung": hung, "key": key, "config": config, "pids": pids}
    finally:
        for node in (good, hung):
            node.close_masters(key, config)
            node.stop()
        if pids.exists():  # only the hang processes this module started, by pid
            for pid in pids.read_text().split():
                subprocess.run(["kill", "-9", pid], capture_output=True)


def _inventory(folder: Path, nodes: dict) -> Path:
    ssh = f'identity_file = "{nodes["key"]}", ssh_config = "{nodes["config"]}"'
    gpus = '[hosts.gpus]\ncount = 2\nname = "NVIDIA H200"\ncompute_capability = "9.0"\ncuda_version = "13.0"\n'
    text = (
        '[deployment]\nname = "sshd-standins"\nkind = "lab"\ngoal = "real sshd in network namespaces"\n\n'
        f'[[hosts]]\nname = "node1"\nplatform = "p"\ntimeout_s = 8\n'
        f'transport = {{ kind = "ssh", address = "{nodes["good"].address}", {ssh} }}\n{gpus}\n'
        f'[[hosts]]\nname = "node1-ct129"\nplatform = "p"\ntimeout_s = 8\n'
        f'transport = {{ kind = "pct", via = "node1", container = 129 }}\n{gpus}\n'
        f'[[hosts]]\nname = "node2-hung"\nplatform = "q"\ntimeout_s = 3\n'
        f'transport = {{ kind = "ssh", address = "{nodes["hung"].address}", {ssh} }}\n{gpus}\n'
        f'[[hosts]]\nname = "gone"\nplatform = "r"\ntimeout_s = 3\n'
        f'transport = {{ kind = "ssh", address = "10.251.1.3", {ssh} }}\n{gpus}\n'
    )
    path = folder / "sshd.toml"
    path.write_text(text)
    return path


def test_contract_over_real_sshd_pct_hung_and_unreachable_hosts(pytester, tmp_path, nodes):
    started = time.monotonic()
    result, outcomes = run_hosts(pytester, "--inventory", str(_inventory(tmp_path, nodes)), "-m", "smoke",
                                 "-p", "no:xdist", timeout=200)
    wall_s = time.monotonic() - started
    failed = not_passed(outcomes)
    ok_hosts = [n for n in outcomes if "[node1]" in n or "[node1-ct129]" in n]
    assert ok_hosts and all(outcomes[n][0] in {"passed", "skipped"} for n in ok_hosts), result.stdout.str()[-4000:]
    hung = {k: m for k, m in failed.items() if "[node2-hung]" in k}
    gone = {k: m for k, m in failed.items() if "[gone]" in k}
    assert set(failed) == set(hung) | set(gone)
    assert "test_host_answers[node2-hung]" not in hung  # the host answers; only nvidia-smi hangs
    assert hung and all("CommandTimeout" in m and "no answer within 3 s" in m for m in hung.values())
    assert gone and all("HostUnreachable" in m and "[gone] ssh failed (rc 255)" in m for m in gone.values())
    assert "test_host_answers[gone]" in gone
    assert wall_s < 150
    # one multiplexed connection per host: its ControlMaster outlives the run (ControlPersist)
    from llmval.io.transport import control_path

    check = subprocess.run(["ssh", "-F", str(nodes["config"]), "-o", f"ControlPath={control_path()}", "-O", "check",
                            f"root@{nodes['good'].address}"], capture_output=True, text=True, timeout=15)
    assert check.returncode == 0 and "Master running" in check.stderr
    # the far side's `timeout` killed the hung nvidia-smi: none of the recorded pids is alive
    time.sleep(3)  # `timeout -k 2` sends KILL 2 s after TERM
    alive = [p for p in nodes["pids"].read_text().split() if live_process(int(p))]
    assert nodes["pids"].read_text().split() and alive == []
