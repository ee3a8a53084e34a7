"""The serving process gets the environment the platform needs (NCCL/GLOO interfaces, P2P off, Ray OOM off)."""

import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]


def test_serving_env_as_required(env_var, facts_of, expect):
    host, (name, wanted) = env_var.host, env_var.item
    env = facts_of(host.name).environment(host.env.source)
    value = None if env is None else env.get(name)
    # a forbidden variable that is set: that it is set is the finding, never its value (it may be a key)
    shown = "<unset>" if value is None else value if wanted is not None else f"set ({len(value)} characters)"
    observed = f"{host.env.source} not found" if env is None else shown
    expect(host.name, f"hosts.env.{name.lower()}", expected=wanted if wanted is not None else "<unset>",
           observed=observed, ok=env is not None and env.get(name) == wanted,
           hint=f"set it where {host.env.source} is defined (Environment= in the unit, -e in docker run)"
           if wanted is not None else f"remove {name} from {host.env.source}",
           evidence=f"read from {env.read_from}" if env is not None else "",
           depends_on=("hosts.gpu.zombie_workers",))  # a serving process gone, its workers left: that is the cause
