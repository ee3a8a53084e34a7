"""Stand-in hosts for live runs of `tests/hosts` on this machine: local-transport hosts whose PATH starts
with a folder of fake `nvidia-smi` and `docker` (shell scripts). The fakes print the REAL H200 captures
(nvidia-smi) and SYNTHESIZED docker/Ray/NCCL answers; `ip`, `fuser`, `find` and `sha256sum` are the real
tools of this machine, over a real small model folder per host. A host named in `hang` gets an
`nvidia-smi` that never answers (it sleeps), to prove the per-command timeout with real processes.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from selftest.strategies import ROOT

REAL = ROOT / "selftest" / "data" / "real" / "h200x2"
HANG_MARKER = "llmval-standin-hang"
HANG_PIDS = "hang.pids"

NVIDIA_SMI = """#!/bin/sh
# fake nvidia-smi of a stand-in host: prints the REAL H200 x2 captures
sleep {latency}
case "$*" in
  *--query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total\\ *) cat {csv} ;;
  "-q -x") cat {xml} ;;
  *) echo "fake nvidia-smi: unsupported: $*" >&2; exit 2 ;;
esac
"""
HANGING_NVIDIA_SMI = f"""#!/bin/bash
# fake nvidia-smi that hangs (a wedged driver): the contract must give up after the host's timeout_s.
# Its pid goes to a file beside this script, so a self-test judges only the hangs it started itself (another
# test on another xdist worker may have its own hang alive at the same moment).
echo $$ >> "$(dirname "$0")/{HANG_PIDS}"
exec -a {HANG_MARKER} sleep 600
"""
JOURNALCTL = """#!/bin/sh
# fake journalctl of a stand-in host (SYNTHESIZED): this boot's kernel banner, no Xid line
sleep {latency}
echo "Dec 01 00:00:00 standin kernel: Linux version 6.8.0-standin (fake) #1 SMP PREEMPT_DYNAMIC"
"""
DOCKER = """#!/bin/sh
# fake docker of a stand-in host (SYNTHESIZED answers)
sleep {latency}
case "$1 $2" in
  "inspect --type") cat {inspect} ;;
  "logs vllm") cat {nccl} ;;
  "exec vllm") cat {ray} ;;
  *) echo "Error: No such object: $*" >&2; exit 1 ;;
esac
"""


def _nccl_log(host: str) -> str:
    return "\n".join(f"{host}:100:100 [0] NCCL INFO {m}" for m in [
        "NCCL version 2.28.9+cuda13.0", "P2P plugin v11 IBext_v11",
        "NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB lo:127.0.0.1<0>", "Using network IBext_v11",
        "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IBext_v11/0",
        "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IBext_v11/0"]) + "\n"


def make_standins(root: Path, names: list[str], *, hang: frozenset[str] = frozenset(), timeout_s: float = 20,
                  with_model: bool = True, latency_s: float = 0.0, health: bool = False) -> Path:
    """Write stand-in host folders under `root` and an inventory for them; return the inventory path.
    `latency_s`: how long each fake nvidia-smi/docker call takes (a real nvidia-smi takes a fraction of a second,
    a remote host adds the ssh round trip). `health`: also declare `[hosts.gpus.health]` (a fake journalctl
    answers the Xid read)."""
    hosts = []
    for name in names:
        base = root / name
        bin_dir = base / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        smi = HANGING_NVIDIA_SMI if name in hang else NVIDIA_SMI.format(
            csv=shlex.quote(str(REAL / "nvidia-smi-query-short.csv")), xml=shlex.quote(str(REAL / "nvidia-smi-q.xml")),
            latency=latency_s)
        container = {"Name": "/vllm", "State": {"Status": "running", "Running": True},
                     "Config": {"Image": "example/vllm:1", "Env": ["NCCL_SOCKET_IFNAME=lo", "NCCL_DEBUG=INFO"]}}
        (base / "inspect.json").write_text(json.dumps([container]))
        (base / "nccl.log").write_text(_nccl_log(name))
        (base / "ray.json").write_text(json.dumps([{"node_id": f"{i:056x}", "node_ip": f"127.0.0.{i + 1}",
                                                    "state": "ALIVE", "is_head_node": i == 0,
                                                    "resources_total": {"GPU": 2.0}} for i in range(2)]))
        docker = DOCKER.format(latency=latency_s, **{k: shlex.quote(str(base / f)) for k, f in
                                                     (("inspect", "inspect.json"), ("nccl", "nccl.log"),
                                                      ("ray", "ray.json"))})
        tools = [("nvidia-smi", smi), ("docker", docker)]
        if health:
            tools.append(("journalctl", JOURNALCTL.format(latency=latency_s)))
        for tool, text in tools:
            (bin_dir / tool).write_text(text)
            (bin_dir / tool).chmod(0o755)
        model = base / "models" / "tiny"
        if with_model:
            model.mkdir(parents=True, exist_ok=True)
            for i in range(3):
                (model / f"model-{i:05d}.safetensors").write_bytes(bytes([i]) * 4096)
        lines = [
            "[[hosts]]", f'name = "{name}"', 'platform = "standin"', f"timeout_s = {timeout_s}",
            f'transport = {{ kind = "local", path_prepend = ["{bin_dir}"] }}',
            'interfaces = [{ name = "lo", subnet = "127.0.0.0/8", kind = "loopback" }]',
            "[hosts.gpus]", "count = 2", 'name = "NVIDIA H200"', 'compute_capability = "9.0"', 'driver_min = "580"',
            'cuda_version = "13.0"',
            *(["[hosts.gpus.health]", "pcie_gen_min = 5", "pcie_width_min = 16", 'persistence_mode = "enabled"']
              if health else []),
            "[hosts.gpu_processes]", 'stack = "down"',
            "[hosts.env]", 'source = "docker:vllm"', 'required = { NCCL_SOCKET_IFNAME = "lo", NCCL_DEBUG = "INFO" }',
            "[hosts.nccl]", 'log = "docker:vllm"', 'expect_transport = "ib"', 'forbid = ["socket"]',
            "[[hosts.services]]", 'kind = "docker"', 'name = "vllm"', 'image = "example/vllm"',
        ]
        if with_model:
            lines += ["[[hosts.model_files]]", f'path = "{model}"', 'group = "tiny"', "min_bytes = 10000"]
        if name == names[0]:
            lines += ["[hosts.ray]", "alive_nodes = 2", "gpus_per_node = 2", 'run_in = "docker:vllm"']
        hosts.append("\n".join(lines))
    inventory = root / "standins.toml"
    inventory.write_text('[deployment]\nname = "standins"\nkind = "lab"\n'
                         'goal = "Stand-in hosts on this machine (fake nvidia-smi/docker, real ip/fuser/find)."\n\n'
                         + "\n\n".join(hosts) + "\n")
    return inventory


def started_hangs(root: Path) -> list[int]:
    """The pids of every hanging nvidia-smi the stand-ins under `root` started."""
    return [int(pid) for path in root.glob(f"*/bin/{HANG_PIDS}") for pid in path.read_text().split()]
