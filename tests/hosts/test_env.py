"""The serving process gets the environment the platform needs (NCCL/GLOO interfaces, P2P off, Ray OOM off)."""

import pytest

from llmval.hostfacts import ServingProcessGone

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]
ZOMBIE_CHECK = "hosts.gpu.zombie_workers"  # a serving process gone, its workers left: that is the cause


def test_serving_env_as_required(env_var, facts_of, expect, settings):
    host, (name, wanted), check = env_var.host, env_var.item, env_var.check
    env = facts_of(host.name).environment(host.env.source)
    if env is None:  # nothing to read the variable from: the server is down (its own check says so), or no match
        served = [f"serving.health@{e.name}" for e in settings.inventory.endpoints if e.host == host.name]
        # a host that serves nothing but reads a process on a Ray cluster: a raylet, gone with its node (the head's
        # node check names it DEAD)
        ray = [] if served else [f"hosts.ray.alive_gpu_nodes@{h.name}" for h in settings.inventory.hosts if h.ray]
        expect.cannot(host.name, check, ServingProcessGone(
            f"[{host.name}] {host.env.source} not found: the serving process is not running, so its environment "
            "cannot be read" + (" (the server is down: see serving.health)" if served else "")
            + (" (a Ray node that is down: see hosts.ray.alive_gpu_nodes)" if ray else "")
            + "; if the server answers, `env.source` names no running process"),
            depends_on=(ZOMBIE_CHECK, *served, *ray))
    value = env.get(name)
    # a forbidden variable that is set: that it is set is the finding, never its value (it may be a key)
    shown = "<unset>" if value is None else value if wanted is not None else f"set ({len(value)} characters)"
    expect(host.name, check, expected=wanted if wanted is not None else "<unset>", observed=shown,
           ok=value == wanted,
           hint=f"set it where {host.env.source} is defined (Environment= in the unit, -e in docker run)"
           if wanted is not None else f"remove {name} from {host.env.source}",
           evidence=f"read from {env.read_from}", depends_on=(ZOMBIE_CHECK,))
