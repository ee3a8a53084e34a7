"""Each host answers a trivial command through its transport."""

import pytest

from llmval.hostfacts import UNAME

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]


def test_host_answers(host, connection, expect):
    result = connection.run(UNAME.render())
    expect(host.name, "hosts.reachable", expected="exit 0", observed="exit 0" if result.rc == 0 else result.failure,
           ok=result.rc == 0, hint="check the transport in the inventory (address, user, key, container id)")
