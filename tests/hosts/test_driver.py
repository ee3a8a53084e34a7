"""The NVIDIA driver is new enough, the same on every host of a platform, and reports the declared CUDA."""

import pytest

from llmval.hostfacts import peer_facts

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("gpus")]


def _version(text):
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def test_driver_at_least_minimum(host, facts, expect):
    if host.gpus.driver_min is None:
        pytest.skip(f"[{host.name}] the inventory declares no minimum driver")
    versions = sorted({g.driver_version for g in facts.gpus()})
    expect(host.name, "hosts.driver.min", expected=f">= {host.gpus.driver_min}", observed=versions,
           ok=bool(versions) and all(_version(v) >= _version(host.gpus.driver_min) for v in versions),
           hint="upgrade the driver (in a container or guest, its user-space driver libraries must match the "
                "host's kernel module)")


def test_driver_equal_across_platform(host, facts, inventory, facts_of, expect):
    peers = [h.name for h in inventory.platform_hosts(host.platform) if h.gpus is not None and h.name != host.name]
    if not peers:
        pytest.skip(f"[{host.name}] no other GPU host in platform {host.platform}")
    mine = sorted({g.driver_version for g in facts.gpus()})
    theirs, unreadable = peer_facts(lambda n: sorted({g.driver_version for g in facts_of(n).gpus()}), peers)
    differing = {name: v for name, v in theirs.items() if v != mine}
    expect(host.name, "hosts.driver.same_across_platform", expected=f"{mine} on {sorted(theirs)}",
           observed=differing or "same", ok=not differing, hint="install the same driver on every node of the platform",
           evidence=f"peers not readable: {unreadable}" if unreadable else "")


def test_cuda_version_matches_inventory(host, facts, expect):
    if host.gpus.cuda_version is None:
        pytest.skip(f"[{host.name}] the inventory declares no CUDA version")
    expect(host.name, "hosts.driver.cuda_version", expected=host.gpus.cuda_version,
           observed=facts.smi_log().cuda_version, hint="the driver's CUDA version (nvidia-smi header) changed")
