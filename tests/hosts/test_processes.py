"""Nothing but the serving processes holds /dev/nvidia* (the seeds' zombie workers)."""

import pytest

from llmval.hostfacts import holder_is_allowed

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("gpu_processes")]


def test_no_stray_gpu_processes(host, facts, expect):
    rule = host.gpu_processes
    up = rule.stack == "up"
    stray = [f"{h.pid} {h.command}" for h in facts.gpu_holders()
             if not (up and holder_is_allowed(h, facts, rule.allowed, rule.allowed_units))]
    expected = "nothing (stack declared down)" if not up else \
        f"only {sorted(rule.allowed)} or processes of {sorted(rule.allowed_units)}"
    expect(host.name, "hosts.gpu.stray_processes", expected=expected, observed=stray or "none", ok=not stray,
           hint=rule.cleanup_hint or "`fuser -v /dev/nvidia*`; stop or kill the leftover workers")
