"""The NVIDIA driver is new enough, the same on every host of a platform, and reports the declared CUDA."""

import weakref

import pytest

from llmval.hostfacts import HostFacts, peer_facts

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("gpus")]


_DRIVER_VERSIONS: weakref.WeakKeyDictionary[HostFacts, list[str]] = weakref.WeakKeyDictionary()
"""Each host's driver versions, worked out once: every host's check compares with every peer's, so at 256 hosts
the peers' facts were asked 65,280 times (O(hosts^2): 2.4 of 91 profiled CPU-seconds). A host whose facts
cannot be read raises each time it is asked (its error is memoized by HostFacts, not here)."""


def _driver_versions(facts: HostFacts) -> list[str]:
    if (known := _DRIVER_VERSIONS.get(facts)) is None:
        known = _DRIVER_VERSIONS[facts] = sorted({g.driver_version for g in facts.gpus()})
    return known


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
    mine = _driver_versions(facts)
    theirs, unreadable = peer_facts(lambda n: _driver_versions(facts_of(n)), peers)
    differing = {name: v for name, v in theirs.items() if v != mine}
    expect(host.name, "hosts.driver.same_across_platform", expected=f"{mine} on {sorted(theirs)}",
           observed=differing or "same", ok=not differing, hint="install the same driver on every node of the platform",
           evidence=f"peers not readable: {unreadable}" if unreadable else "")


def test_cuda_version_matches_inventory(host, facts, expect):
    if host.gpus.cuda_version is None:
        pytest.skip(f"[{host.name}] the inventory declares no CUDA version")
    expect(host.name, "hosts.driver.cuda_version", expected=host.gpus.cuda_version,
           observed=facts.smi_log().cuda_version, hint="the driver's CUDA version (nvidia-smi header) changed")
