"""The interfaces the platform needs (IB/RoCE, loopback) are up with an address in their subnet."""

import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]


def test_interface_up_in_subnet(interface, facts_of, expect):
    host, spec = interface.host, interface.item
    links = facts_of(host.name).links()
    link = links.get(spec.name)
    observed = (f"missing (have {sorted(links)})" if link is None else f"{link.operstate} {list(link.addresses)}")
    expect(host.name, f"hosts.interface.{spec.name}", expected=f"UP with an address in {spec.subnet}",
           observed=observed, ok=link is not None and link.is_up and bool(link.addresses_in(spec.subnet)),
           hint="`ip -br addr`; for RoCE also `ibv_devinfo` (port ACTIVE); check the netplan/ifupdown config")
