"""The GPUs each host shows in nvidia-smi are the ones the inventory declares."""

import pytest

from llmval.parsers.nvidia_smi import normalize_bus_id

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("gpus")]

SMI_HINT = "`nvidia-smi -L`; `dmesg | grep -i xid` (Xid 79: GPU fell off the bus); in a guest, check the split"


def test_gpu_count_matches_inventory(host, facts, expect):
    lost = facts.gpus_lost()  # nvidia-smi's own words ("No devices were found"): none to count, and why
    gpus = [] if lost else facts.gpus()
    expect(host.name, "hosts.gpu.count", expected=host.gpus.count, observed=len(gpus), hint=SMI_HINT,
           evidence=lost or "; ".join(f"{g.index}: {g.name} {g.bus_id}" for g in gpus))


def test_gpu_names_match_inventory(host, facts, expect):
    if host.gpus.name is None:
        pytest.skip(f"[{host.name}] the inventory declares no GPU name")
    odd = {g.index: g.name for g in facts.gpus() if g.name != host.gpus.name}
    expect(host.name, "hosts.gpu.name", expected=f"every GPU: {host.gpus.name}", observed=odd or "all match",
           ok=not odd, hint="another GPU model, another SKU or edition of the declared one, or the wrong host")


def test_compute_capability_matches_inventory(host, facts, expect):
    if host.gpus.compute_capability is None:
        pytest.skip(f"[{host.name}] the inventory declares no compute capability")
    odd = {g.index: g.compute_cap for g in facts.gpus() if g.compute_cap != host.gpus.compute_capability}
    expect(host.name, "hosts.gpu.compute_cap", expected=f"every GPU: {host.gpus.compute_capability}",
           observed=odd or "all match", ok=not odd,
           hint=f"another GPU architecture than SM{host.gpus.compute_capability.replace('.', '')}: kernels and images "
                "built for one architecture may not load on another (their CUDA arch list)")


def test_gpu_memory_as_declared(host, facts, expect):
    spec = host.gpus
    if spec.memory == "not_reported":
        odd = {g.index: g.memory_total_mib for g in facts.gpus() if g.memory_total_mib is not None}
        expect(host.name, "hosts.gpu.memory", expected="memory.total [N/A] (unified memory)",
               observed=odd or "all [N/A]", ok=not odd,
               hint="a unified-memory GPU reports [N/A], as declared; a number means another GPU")
        return
    floor = spec.memory_total_mib_min or 1
    odd = {g.index: g.memory_total_mib for g in facts.gpus() if (g.memory_total_mib or 0) < floor}
    expect(host.name, "hosts.gpu.memory", expected=f"memory.total >= {floor} MiB", observed=odd or "all enough",
           ok=not odd, hint="set gpus.memory = 'not_reported' for a unified-memory GPU (memory.total [N/A])")


def test_gpu_uuids_match_inventory(host, facts, expect):
    if host.gpus.uuids is None:
        pytest.skip(f"[{host.name}] the inventory declares no GPU UUIDs")
    expect(host.name, "hosts.gpu.uuids", expected=sorted(host.gpus.uuids),
           observed=sorted(g.uuid for g in facts.gpus()),
           hint="a GPU was swapped or the guest got other GPUs than declared")


def test_gpu_bus_ids_match_inventory(host, facts, expect):
    if host.gpus.bus_ids is None:
        pytest.skip(f"[{host.name}] the inventory declares no GPU bus ids")
    expect(host.name, "hosts.gpu.bus_ids", expected=sorted(normalize_bus_id(b) for b in host.gpus.bus_ids),
           observed=sorted(g.bus_id for g in facts.gpus()),
           hint="the guest sees other GPUs than its split; compare the LXC config with the node's GPU list")
