"""Each host answers a trivial command through its transport."""

import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]


def test_host_answers(host, connection, expect):
    result = connection.run("uname -sm")
    expect(host.name, "hosts.reachable", expected="exit 0", observed=f"exit {result.rc}: {result.stderr[-200:]}",
           ok=result.rc == 0)
