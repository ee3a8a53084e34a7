"""Each host answers a trivial command through its transport."""

import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]


def test_host_answers(host, facts, expect):
    result = facts.uname()
    expect(host.name, "hosts.reachable", expected="exit 0", observed="exit 0" if result.rc == 0 else result.failure,
           ok=result.rc == 0, hint="check the transport in the inventory (address, user, key, container id)")
