"""Peer-to-peer between the host's GPUs is what the inventory declares (kpro6: blocked under the IOMMU)."""

import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("gpus")]


def test_gpu_p2p_read_as_declared(host, facts, expect):
    if host.gpus.p2p is None:
        pytest.skip(f"[{host.name}] the inventory declares no P2P expectation")
    matrix = facts.p2p_read()
    not_ok = {f"{a}->{b}": status for (a, b), status in sorted(matrix.items()) if status != "OK"}
    if host.gpus.p2p == "supported":
        ok, observed = not not_ok, not_ok or f"all {len(matrix)} pairs OK"
    else:
        ok, observed = len(not_ok) == len(matrix), {k: v for k, v in matrix.items() if v == "OK"} or "none OK"
    expect(host.name, "hosts.gpu.p2p", expected=f"P2P read {host.gpus.p2p} between every GPU pair",
           observed=observed, ok=ok,
           hint="`nvidia-smi topo -p2p r`: CNS = chipset, GNS = GPU, TNS = topology not supported, NS = not "
                "supported (e.g. under an IOMMU in DMA-translation mode), DR = disabled by a driver registry key "
                "(NVreg_RegistryDwords in /etc/modprobe.d); where P2P is blocked, run NCCL with NCCL_P2P_DISABLE=1")
