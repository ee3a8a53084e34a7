"""The serving process gets the environment the platform needs (NCCL/GLOO interfaces, P2P off, Ray OOM off)."""

import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("env")]


def test_serving_env_as_required(host, facts, expect):
    spec = host.env
    env = facts.environment(spec.source)
    if env is None:
        expect(host.name, "hosts.env", expected=f"{spec.source} exists", observed="not found", ok=False,
               hint="is the service running under the declared name?")
        return
    odd = {k: env.get(k, "<unset>") for k, v in spec.required.items() if env.get(k) != v}
    odd |= {k: f"{env[k]} (forbidden)" for k in spec.forbidden if k in env}
    expect(host.name, "hosts.env", expected={**spec.required, **{k: "<unset>" for k in spec.forbidden}},
           observed=odd or "as required", ok=not odd,
           hint=f"set them where {spec.source} is defined (Environment= in the unit, -e in docker run)")
