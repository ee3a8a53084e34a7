"""The Ray cluster has the expected number of ALIVE nodes with GPUs (State API JSON); `ray status` says, as
evidence, how its GPUs are used and what waits for them."""

import pytest

from llmval.core.errors import LlmvalError

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("ray")]


def test_ray_alive_gpu_nodes(host, facts, expect):
    spec = host.ray
    nodes = facts.ray_nodes(spec.run_in)
    alive = [n for n in nodes if n.is_alive and n.gpus >= spec.gpus_per_node]
    others = [f"{n.ip or n.node_id[:12]} {n.state} GPU={n.gpus:g}" + (f" ({n.state_message})" if n.state_message
                                                                        else "") for n in nodes if n not in alive]
    try:
        status = facts.ray_status(spec.run_in)
    except LlmvalError as error:  # a recording made before this read, or ray status failing: evidence only
        evidence = f"ray status not read: {str(error).splitlines()[0][:200]}"
    else:
        gpu = status.usage.get("GPU")
        evidence = "ray status: " + (gpu.line if gpu else "no GPU in Usage") + (
            " (every GPU in use or reserved)" if status.gpus_all_taken else "") + (
            f"; demands no node meets: {list(status.demands)}" if status.demands else "") + (
            f"; recent failures: {list(status.failures)}" if status.failures else "")
    expect(host.name, "hosts.ray.alive_gpu_nodes",
           expected=f"{spec.alive_nodes} ALIVE with >= {spec.gpus_per_node:g} GPU",
           observed=f"{len(alive)}: {[n.ip for n in alive]}" + (f"; not counted: {others}" if others else ""),
           ok=len(alive) == spec.alive_nodes,
           hint="restart the worker's `ray start --address=<head>:6379 --node-ip-address=<its address on the network "
                "the nodes share>`; check that network's link (a node's auto-detected address may be one the others "
                "cannot reach)", evidence=evidence)
