"""The kpro6 and Spark host contract on SYNTHESIZED replays: healthy passes; every broken variant fails
exactly the one check that should, naming the host and the cause, and nothing else fails."""

from __future__ import annotations

import pytest

from selftest.strategies import ROOT

from ._contract import REPLAYS, not_passed, run_hosts

pytest_plugins = ["pytester"]

# variant -> (test that must fail, strings its message must hold: host, check, cause)
BROKEN = {
    "kpro6-wrong-cc": ("test_compute_capability_matches_inventory[kpro6-ct129]",
                       ["[kpro6-ct129] hosts.gpu.compute_cap", "expected: every GPU: 12.0", "'12.1'"]),
    "kpro6-gpu-missing-from-split": ("test_vm_config_passes_exactly_its_gpus[kpro6-vm130]",
                                     ["[kpro6] hosts.split.vm130.hostpci", "0000:e1:00.0", "hint:"]),
    "kpro6-p2p-channel": ("test_nccl_transport_as_expected[kpro6-ct129]",
                          ["[kpro6-ct129] hosts.nccl.transport", "'forbidden seen': ['p2p']", "via P2P/CUMEM"]),
    "kpro6-p2p-lifted": ("test_gpu_p2p_read_as_declared[kpro6-ct129]",
                         ["blocker lifted", "kpro6-p2p", "hosts.gpu.p2p"]),
    "kpro6-pcie-downtrained": ("test_gpu_pcie_link_at_its_maximum[kpro6-ct129]",
                               ["[kpro6-ct129] hosts.gpu.health.pcie_link", "expected: current link >= Gen5 x16",
                                "0000:41:00.0", "pci/pci_gpu_link_info/pcie_gen/current_link_gen=3",
                                "current_link_width=8x", "riser"]),
    "kpro6-ecc-uncorrectable": ("test_gpu_no_uncorrectable_ecc_errors[kpro6-ct129]",
                                ["[kpro6-ct129] hosts.gpu.health.ecc_uncorrectable", "0000:21:00.0",
                                 "ecc_errors/volatile/dram_uncorrectable=2",
                                 "ecc_errors/aggregate/dram_uncorrectable=2",
                                 "dcgmi diag"]),
    "kpro6-row-remap-pending": ("test_gpu_no_pending_row_remap[kpro6-ct129]",
                                ["[kpro6-ct129] hosts.gpu.health.row_remap", "0000:61:00.0",
                                 "remapped_rows/remapped_row_pending=Yes", "GPU reset"]),
    "kpro6-xid79": ("test_gpu_no_xid_since_boot[kpro6-ct129]",
                    ["[kpro6-ct129] hosts.gpu.health.xid", "Xid 79", "GPU has fallen off the bus",
                     "NVRM: Xid (PCI:0000:21:00): 79, pid='<unknown>'", "48 = double-bit ECC error"]),
    "kpro6-thermal-slowdown": ("test_gpu_no_thermal_or_power_slowdown[kpro6-ct129]",
                               ["[kpro6-ct129] hosts.gpu.health.throttle", "0000:01:00.0",
                                "clocks_event_reasons/clocks_event_reason_hw_thermal_slowdown=Active in both samples",
                                "temperature/gpu_temp=94 C", "cooling"]),
    "kpro6-uvm-not-allowed": ("test_lxc_cgroup_allows_nvidia_devices[kpro6-lxc129]",
                              ["[kpro6] hosts.split.lxc129.cgroup", "/dev/nvidia-uvm", "c 509:0 not allowed",
                               "/dev/nvidia-uvm-tools", "lxc.cgroup2.devices.allow: c 509:* rwm"]),
    "spark-wrong-cc": ("test_compute_capability_matches_inventory[spark2]",
                       ["[spark2] hosts.gpu.compute_cap", "expected: every GPU: 12.1", "'12.0'"]),
    "spark-socket-transport": ("test_nccl_transport_as_expected[spark1]",
                               ["[spark1] hosts.nccl.transport", "via NET/Socket/0", "NET/IB found no device"]),
    "spark-model-hash-mismatch": ("test_model_files_identical[qwen3.5-122b-a10b-fp8@spark1+spark2]",
                                  ["[spark2] hosts.model_files.sha256", "identical to spark1",
                                   "model-00017-of-00026.safetensors: sha256"]),
    "spark-dead-ray-worker": ("test_ray_alive_gpu_nodes[spark1]",
                              ["[spark1] hosts.ray.alive_gpu_nodes", "192.168.200.2 DEAD", "expected: 2 ALIVE",
                               "ray status: 1.0/1.0 GPU (1.0 used of 1.0 reserved in placement groups) (every GPU "
                               "in use or reserved); demands no node meets"]),
    "spark-engine-oom-loop": ("test_service_running[spark2-vllm-qwen35]",
                              ["[spark2] hosts.service.vllm-qwen35.running", "restarting (exit code 137: SIGKILL",
                               "OOM-killed (State.OOMKilled", "restarted 14 times and restarting now: a restart loop"]),
    "spark-glm-running": ("test_service_absent[spark1-vllm-glm-4.7-flash]",
                          ["[spark1] hosts.service.vllm-glm-4.7-flash.absent", "observed: running", "GLM-4.7-Flash"]),
}


def _inventory(variant: str) -> str:
    return str(ROOT / "inventories" / f"{variant.split('-')[0]}.toml")


@pytest.mark.parametrize("platform", ["kpro6", "spark"])
def test_healthy_replay_passes(pytester, platform):
    result, outcomes = run_hosts(pytester, "--inventory", _inventory(platform),
                                 "--replay", str(REPLAYS / f"SYNTHESIZED-{platform}-healthy"))
    assert not_passed(outcomes) == {}, result.stdout.str()[-3000:]
    assert result.ret == 0
    assert sum(o == "passed" for o, _ in outcomes.values()) >= 15
    blocked = {n.split("::", 1)[1]: o for n, (o, _) in outcomes.items() if o == "xfailed"}
    assert blocked == ({"test_gpu_p2p_read_as_declared[kpro6-ct129]": "xfailed"} if platform == "kpro6" else {})


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_broken_replay_fails_exactly_its_check(pytester, variant):
    failing_test, needles = BROKEN[variant]
    result, outcomes = run_hosts(pytester, "--inventory", _inventory(variant),
                                 "--replay", str(REPLAYS / f"SYNTHESIZED-{variant}"))
    failed = not_passed(outcomes)
    assert list(failed) == [failing_test], result.stdout.str()[-3000:]
    assert outcomes[next(n for n in outcomes if n.endswith(failing_test))][0] == "failed"
    message = failed[failing_test]
    missing = [n for n in needles if n not in message]
    assert not missing, f"message lacks {missing}:\n{message}"


def test_every_synthesized_folder_is_labelled_and_checked():
    folders = sorted(p.name for p in REPLAYS.glob("SYNTHESIZED-*"))
    assert folders == sorted([f"SYNTHESIZED-{v}" for v in BROKEN] + ["SYNTHESIZED-kpro6-healthy",
                                                                       "SYNTHESIZED-spark-healthy"])
    assert "SYNTHESIZED" in (REPLAYS / "README.md").read_text()
