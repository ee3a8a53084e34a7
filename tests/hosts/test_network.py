"""The interfaces the platform needs (IB/RoCE, loopback) are up with an address in their subnet."""

import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("interfaces")]


def test_interfaces_up_in_subnet(host, facts, expect):
    links = facts.links()
    odd = {}
    for spec in host.interfaces:
        link = links.get(spec.name)
        if link is None:
            odd[spec.name] = f"missing (have {sorted(links)})"
        elif not link.is_up:
            odd[spec.name] = f"state {link.operstate}"
        elif not link.addresses_in(spec.subnet):
            odd[spec.name] = f"no address in {spec.subnet}: {list(link.addresses)}"
    expect(host.name, "hosts.net.interfaces", expected={i.name: f"up in {i.subnet}" for i in host.interfaces},
           observed=odd or "all up in subnet", ok=not odd,
           hint="`ip -br addr`; for RoCE also `ibv_devinfo` (port state ACTIVE); check the netplan/ifupdown config")
