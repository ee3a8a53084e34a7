"""With `--wait-ready`, the host answered its transport within the wait (after a reboot it may take minutes)."""

import pytest

# the first check of a host: every other one waits on it (NotReady), so it waits on none but its node's readiness
# (a container reached through `via`: the node down is one fault, one root cause, the container's under it)
pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.depends_on()]


def test_host_ready_within_wait(host, readiness, expect):
    outcome = readiness[host.name]
    expect(host.name, "hosts.ready", expected=f"answers `uname -a` within {outcome.deadline_s:g} s",
           observed=f"answered after {outcome.waited_s:g} s" if outcome.ready
           else f"no answer after {outcome.deadline_s:g} s: {outcome.last_reason}",
           ok=outcome.ready, hint="the host is still booting or its transport is wrong (address, user, key, "
                                  "container id)", evidence=outcome.verdict(),
           depends_on=(f"hosts.ready@{via}",) if (via := getattr(host.transport, "via", None)) else ())
