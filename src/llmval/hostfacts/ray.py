"""Ray cluster nodes from the State API (`ray list nodes --format json`), on the host or in its container."""

from __future__ import annotations

from ..inventory import Source
from ..parsers.ray import RayNode, parse_ray_nodes
from ._command import CONTAINER, Command
from ._fact import Reader, fact

RAY_NODES = Command("ray-nodes", "ray list nodes --format json")
RAY_NODES_DOCKER = Command("ray-nodes-docker", "docker exec {name} ray list nodes --format json", name=CONTAINER)


@fact(RAY_NODES, RAY_NODES_DOCKER, section="ray",
      judges={"ray.alive_nodes": "hosts.ray.alive_gpu_nodes", "ray.gpus_per_node": "hosts.ray.alive_gpu_nodes"},
      needs=lambda h: [(h.ray.run_in,)] if h.ray else [])
def ray_nodes(host: Reader, run_in: Source | None) -> list[RayNode]:
    """Every node Ray knows, with state and GPU count."""
    if run_in is None:
        return parse_ray_nodes(host.output(RAY_NODES))
    return parse_ray_nodes(host.output(RAY_NODES_DOCKER, name=run_in.value))
