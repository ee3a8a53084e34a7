"""Ray cluster state from the State API's machine format (`ray list nodes|actors|jobs --format json`), and
`ray.nodes()` JSON for nodes.

    >>> nodes = parse_ray_nodes('[{"node_id":"a","node_ip":"192.168.200.1","state":"ALIVE",'
    ...                         '"is_head_node":true,"resources_total":{"GPU":1.0}}]')
    >>> nodes[0].is_alive, nodes[0].gpus
    (True, 1.0)

Shapes as Ray 2.60 prints them (read off a live cluster, 2026-12-02): a node that stopped answering stays listed
as `"state": "DEAD"` with `"state_message": "Unexpected termination: health check failed due to missing too many
heartbeats"`; `ray list jobs` gives each driver as `"driver_info": {"id": .., "node_ip_address": .., "pid": "9479"}`
(the pid a string); `ray list actors` gives each actor's `pid`, `class_name`, `job_id` and `node_id`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..core.errors import ParseError
from ..core.jsontext import read_json


@dataclass(frozen=True)
class RayNode:
    node_id: str
    ip: str
    is_alive: bool
    is_head: bool
    gpus: float
    state: str
    state_message: str = ""
    """Why Ray gave the node up (`Unexpected termination: health check failed ...`); empty while ALIVE."""


def _json_start(text: str) -> str:
    """Ray may print log lines before the JSON; start at the first line that opens it."""
    for index, line in enumerate(text.splitlines()):
        if line.lstrip().startswith(("[", "{")):
            return "\n".join(text.splitlines()[index:])
    return text


EMPTY_LIST = "No resource in the cluster"
"""What `ray list ... --format json` prints instead of `[]` when it lists nothing (Ray's `format_list_api_output`
says so before it looks at the format): read off the lent H200 on stdout, nothing on stderr, from `ray list actors`
and `ray list jobs` of a fresh cluster."""


def _json_list(text: str, what: str) -> list:
    """The JSON list of a `ray list ... --format json` (log lines before it skipped; the dashboard's REST
    envelope `{"data": {"result": {"result": [...]}}}` unwrapped; Ray's `No resource in the cluster` an empty
    list); each entry a JSON object."""
    lines = text.strip().splitlines()
    if lines and lines[-1].strip() == EMPTY_LIST:
        return []
    data = read_json(_json_start(text), f"ray {what} JSON")  # ParseError naming it: not JSON, or over a bound
    if isinstance(data, dict):
        envelope = data.get("data")
        inner = envelope.get("result") if isinstance(envelope, dict) else None
        data = inner.get("result", data.get("result")) if isinstance(inner, dict) else data.get("result")
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        raise ParseError(f"ray {what} JSON", f"expected a list of {what}", text[:200])
    return data


def _gpus(entry: dict, key: str) -> float:
    """The GPU count of a node's resources (`{"GPU": 1.0}`; none listed: 0); ParseError naming the key when the
    resources are not an object of numbers (`"resources_total": "abc"`)."""
    resources = entry.get(key) or {}
    gpus = resources.get("GPU", 0) if isinstance(resources, dict) else None
    if isinstance(gpus, bool) or not isinstance(gpus, int | float):
        raise ParseError("ray nodes JSON", f"`{key}` is not an object whose GPU is a number",
                         json.dumps(entry)[:200])
    return float(gpus)


def parse_ray_nodes(text: str) -> list[RayNode]:
    """Both shapes: State API (`state`, `node_ip`, `resources_total`) and `ray.nodes()` (`Alive`, `Resources`)."""
    data = _json_list(text, "nodes")
    nodes = []
    for entry in data:
        if "state" in entry:
            nodes.append(RayNode(str(entry.get("node_id", "")), str(entry.get("node_ip", "")),
                                 entry["state"] == "ALIVE", bool(entry.get("is_head_node")),
                                 _gpus(entry, "resources_total"), str(entry["state"]),
                                 str(entry.get("state_message") or "")))
        elif "Alive" in entry:
            nodes.append(RayNode(str(entry.get("NodeID", "")), str(entry.get("NodeManagerAddress", "")),
                                 bool(entry["Alive"]), False, _gpus(entry, "Resources"),
                                 "ALIVE" if entry["Alive"] else "DEAD"))
        else:
            raise ParseError("ray nodes JSON", "node has neither `state` nor `Alive`", json.dumps(entry)[:200])
    return nodes


@dataclass(frozen=True)
class RayActor:
    """One actor as `ray list actors` lists it: vLLM's GPU workers are actors (`RayWorkerProc` from vLLM 0.2x's
    default executor, `RayWorkerWrapper` from the older one) owned by the engine's driver job."""

    pid: int
    class_name: str
    name: str
    state: str
    job_id: str
    node_id: str


@dataclass(frozen=True)
class RayJob:
    """One job as `ray list jobs` lists it: the driver that owns its actors (`driver_info.pid` on
    `driver_info.node_ip_address`) and the job's status (`RUNNING`, `SUCCEEDED`, `FAILED`, `STOPPED`)."""

    job_id: str
    status: str
    driver_pid: int | None
    driver_ip: str


def _int_or_none(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


def parse_ray_actors(text: str) -> list[RayActor]:
    """`ray list actors --format json` (State API).

    >>> parse_ray_actors('[{"class_name":"RayWorkerProc","state":"ALIVE","job_id":"02000000","name":"",'
    ...                  '"node_id":"e366","pid":9502}]')[0].pid
    9502
    """
    return [RayActor(_int_or_none(entry.get("pid")) or 0, str(entry.get("class_name") or ""),
                     str(entry.get("name") or ""), str(entry.get("state") or ""), str(entry.get("job_id") or ""),
                     str(entry.get("node_id") or "")) for entry in _json_list(text, "actors")]


def parse_ray_jobs(text: str) -> list[RayJob]:
    """`ray list jobs --format json` (State API); a job without a driver (submitted, not started) has none.

    >>> parse_ray_jobs('[{"type":"DRIVER","job_id":"02000000","driver_info":{"id":"02000000",'
    ...                '"node_ip_address":"127.0.1.1","pid":"11396"},"status":"RUNNING"}]')[0].driver_pid
    11396
    """
    jobs = []
    for entry in _json_list(text, "jobs"):
        driver = entry.get("driver_info") or {}
        if not isinstance(driver, dict):
            driver = {}
        jobs.append(RayJob(str(entry.get("job_id") or ""), str(entry.get("status") or ""),
                           _int_or_none(driver.get("pid")), str(driver.get("node_ip_address") or "")))
    return jobs
