"""Ray cluster state from the State API (`ray list nodes|actors|jobs --format json`), on the host or in its
container.

Nodes are what `hosts.ray.alive_gpu_nodes` judges. Actors and jobs are read only when a process under a raylet
holds the GPUs (`llmval.gpu.holders.read_judgement`): a Ray worker is a child of its node's raylet, not of the
API server, so whether its server is still there is told through its driver (the job that owns the actor).
"""

from __future__ import annotations

from ..inventory import Source
from ..parsers.ray import (
    RayActor,
    RayJob,
    RayNode,
    RayStatus,
    parse_ray_actors,
    parse_ray_jobs,
    parse_ray_nodes,
    parse_ray_status,
)
from ._command import CONTAINER, Command
from ._fact import Reader, fact

RAY_NODES = Command("ray-nodes", "ray list nodes --format json")
RAY_NODES_DOCKER = Command("ray-nodes-docker", "docker exec {name} ray list nodes --format json", name=CONTAINER)
# --limit: the State API lists 100 entries unless told otherwise; a long-lived cluster has more jobs than that
RAY_ACTORS = Command("ray-actors", "ray list actors --format json --limit 10000")
RAY_ACTORS_DOCKER = Command("ray-actors-docker", "docker exec {name} ray list actors --format json --limit 10000",
                            name=CONTAINER)
RAY_JOBS = Command("ray-jobs", "ray list jobs --format json --limit 10000")
RAY_JOBS_DOCKER = Command("ray-jobs-docker", "docker exec {name} ray list jobs --format json --limit 10000",
                          name=CONTAINER)


RAY_STATUS = Command("ray-status", "ray status")
RAY_STATUS_DOCKER = Command("ray-status-docker", "docker exec {name} ray status", name=CONTAINER)
"""The autoscaler's summary: resource usage (`2.0/2.0 GPU (2.0 used of 2.0 reserved in placement groups)`) and the
demands no node meets: why an engine's placement group waits."""


@fact(RAY_NODES, RAY_NODES_DOCKER, section="ray",
      judges={"ray.alive_nodes": "hosts.ray.alive_gpu_nodes", "ray.gpus_per_node": "hosts.ray.alive_gpu_nodes"},
      needs=lambda h: [(h.ray.run_in,)] if h.ray else [])
def ray_nodes(host: Reader, run_in: Source | None) -> list[RayNode]:
    """Every node Ray knows, with state and GPU count."""
    if run_in is None:
        return parse_ray_nodes(host.output(RAY_NODES))
    return parse_ray_nodes(host.output(RAY_NODES_DOCKER, name=run_in.value))


@fact(RAY_ACTORS, RAY_ACTORS_DOCKER, section="gpu_processes", needs=lambda h: False)
def ray_actors(host: Reader, run_in: Source | None) -> list[RayActor]:
    """Every actor Ray knows (alive and dead), with its pid, class, job and node."""
    if run_in is None:
        return parse_ray_actors(host.output(RAY_ACTORS))
    return parse_ray_actors(host.output(RAY_ACTORS_DOCKER, name=run_in.value))


@fact(RAY_JOBS, RAY_JOBS_DOCKER, section="gpu_processes", needs=lambda h: False)
def ray_jobs(host: Reader, run_in: Source | None) -> list[RayJob]:
    """Every job Ray knows, with its status and its driver's pid and node address."""
    if run_in is None:
        return parse_ray_jobs(host.output(RAY_JOBS))
    return parse_ray_jobs(host.output(RAY_JOBS_DOCKER, name=run_in.value))


@fact(RAY_STATUS, RAY_STATUS_DOCKER, section="ray", needs=lambda h: False)
def ray_status(host: Reader, run_in: Source | None) -> RayStatus:
    """`ray status`: active/pending nodes, recent failures, resource usage (with placement-group reservations) and
    unmet demands."""
    if run_in is None:
        return parse_ray_status(host.output(RAY_STATUS))
    return parse_ray_status(host.output(RAY_STATUS_DOCKER, name=run_in.value))
