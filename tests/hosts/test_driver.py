"""The NVIDIA driver is new enough, the same on every host of a platform, and reports the declared CUDA."""

import weakref
from collections.abc import Callable

import pytest

from llmval.hostfacts import HostFacts, peer_facts

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("gpus")]


_DRIVER_VERSIONS: weakref.WeakKeyDictionary[HostFacts, list[str]] = weakref.WeakKeyDictionary()
"""Each host's driver versions, worked out once: every host's check compares with every peer's, so at 256 hosts
the peers' facts were asked 65,280 times (O(hosts^2): 2.4 of 91 profiled CPU-seconds). A host whose facts
cannot be read raises each time it is asked (its error is memoized by HostFacts, not here)."""

_PLATFORM_DRIVERS: weakref.WeakKeyDictionary[Callable, dict[tuple[str, ...], tuple[dict, dict]]] = \
    weakref.WeakKeyDictionary()
"""The driver versions of a platform's GPU hosts as `peer_facts` answered them, asked once per session (`facts_of`)
and platform: a fact is read once per process and its answer or error memoized, so the answers cannot change within
the session, and each host's check only leaves itself out. Asking every peer in every host's check walked the
platform once per host (O(hosts^2): 0.9 of 25 GIL-seconds of a 256-host smoke, issue 35)."""


def _driver_versions(facts: HostFacts) -> list[str]:
    if (known := _DRIVER_VERSIONS.get(facts)) is None:
        known = _DRIVER_VERSIONS[facts] = sorted({g.driver_version for g in facts.gpus()})
    return known


def _platform_drivers(facts_of: Callable[[str], HostFacts], names: tuple[str, ...]) -> tuple[dict, dict]:
    known = _PLATFORM_DRIVERS.setdefault(facts_of, {})
    if (answers := known.get(names)) is None:
        answers = known[names] = peer_facts(lambda n: _driver_versions(facts_of(n)), list(names))
    return answers


PEERS_LISTED = 16


def _peers_text(names: list[str]) -> str:
    """The peers compared with (`names` in inventory order), as the expectation names them: every one up to
    `PEERS_LISTED`, sorted, else how many and the first and last (a 256-host platform's list was 4 KB in each host's
    verdict, cut to 400 characters there, and redacted whole first: 0.5 of 16 GIL-seconds of a 256-host smoke,
    issue 35)."""
    if len(names) <= PEERS_LISTED:
        return str(sorted(names))
    return f"{len(names)} peers ({names[0]} ... {names[-1]})"


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
    gpu_hosts = tuple(h.name for h in inventory.platform_hosts(host.platform) if h.gpus is not None)
    if not set(gpu_hosts) - {host.name}:
        pytest.skip(f"[{host.name}] no other GPU host in platform {host.platform}")
    mine = _driver_versions(facts)
    answered, errors = _platform_drivers(facts_of, gpu_hosts)
    theirs = {name: v for name, v in answered.items() if name != host.name}
    unreadable = {name: why for name, why in errors.items() if name != host.name}
    differing = {name: v for name, v in theirs.items() if v != mine}
    expect(host.name, "hosts.driver.same_across_platform", expected=f"{mine} on {_peers_text(list(theirs))}",
           observed=differing or "same", ok=not differing, hint="install the same driver on every node of the platform",
           evidence=f"peers not readable: {unreadable}" if unreadable else "")


def test_cuda_version_matches_inventory(host, facts, expect):
    if host.gpus.cuda_version is None:
        pytest.skip(f"[{host.name}] the inventory declares no CUDA version")
    expect(host.name, "hosts.driver.cuda_version", expected=host.gpus.cuda_version,
           observed=facts.smi_log().cuda_version, hint="the driver's CUDA version (nvidia-smi header) changed")
