"""Ray cluster state from the State API's machine format (`ray list nodes|actors|jobs --format json`),
`ray.nodes()` JSON for nodes, the State API's table form (`ray list nodes` without `--format json`: Ray's
`format_list_api_output`, tabulate's `plain` table under `Table:`, dict cells YAML-dumped over several lines) and
`ray status` (the autoscaler's summary: `Node status` with `Active:`/`Pending:`/`Recent failures:`, `Resources`
with `Usage:` lines `1.0/2.0 GPU (1.0 used of 2.0 reserved in placement groups)` and `Demands:`).

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
import re
from dataclasses import dataclass, field

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


TABLE_HEAD_RE = re.compile(r"^\s*NODE_ID\s+NODE_IP\b")
TABLE_ROW_RE = re.compile(r"^\s*\d+\s+\S")
GPU_CELL_RE = re.compile(r"(?:^|\s)GPU:\s*(?P<n>[\d.]+)")


def parse_ray_nodes_table(text: str) -> list[RayNode]:
    """`ray list nodes` in its table form: each row under the `NODE_ID NODE_IP IS_HEAD_NODE STATE ...` header, its
    cells cut at the header's column starts; a RESOURCES_TOTAL cell continues on the lines below the row (`GPU: 2.0`).

    >>> table = ("Table:\\n------------------------------\\n"
    ...          "    NODE_ID   NODE_IP      IS_HEAD_NODE    STATE    NODE_NAME    RESOURCES_TOTAL\\n"
    ...          " 0  1bef71    10.0.0.11    True            ALIVE    10.0.0.11    CPU: 20.0\\n"
    ...          "                                                                 GPU: 1.0\\n")
    >>> [(n.ip, n.is_head, n.is_alive, n.gpus) for n in parse_ray_nodes_table(table)]
    [('10.0.0.11', True, True, 1.0)]
    """
    lines = text.splitlines()
    head = next((i for i, line in enumerate(lines) if TABLE_HEAD_RE.match(line)), None)
    if head is None:
        raise ParseError("ray list nodes (table)", "no `NODE_ID  NODE_IP ...` header", text[:200])
    columns = [(m.group(0), m.start()) for m in re.finditer(r"[A-Z_]+", lines[head])]
    rows: list[dict[str, str]] = []
    for line in lines[head + 1:]:
        if not line.strip():
            continue
        if TABLE_ROW_RE.match(line):
            rows.append({})
        elif not rows:
            continue
        for index, (name, start) in enumerate(columns):
            end = columns[index + 1][1] if index + 1 < len(columns) else len(line)
            cell = line[start:end].strip() if len(line) > start else ""
            if cell:
                rows[-1][name] = (rows[-1].get(name, "") + " " + cell).strip()
    nodes = []
    for row in rows:
        gpus = GPU_CELL_RE.search(row.get("RESOURCES_TOTAL", ""))
        state = row.get("STATE", "")
        nodes.append(RayNode(row.get("NODE_ID", ""), row.get("NODE_IP", ""), state == "ALIVE",
                             row.get("IS_HEAD_NODE", "") == "True", float(gpus["n"]) if gpus else 0.0, state,
                             row.get("STATE_MESSAGE", "")))
    return nodes


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
    """Both JSON shapes: State API (`state`, `node_ip`, `resources_total`) and `ray.nodes()` (`Alive`,
    `Resources`); the State API's table form where the output is no JSON but a `Table:` (`parse_ray_nodes_table`)."""
    if "Table:" in text and any(TABLE_HEAD_RE.match(line) for line in text.splitlines()):
        return parse_ray_nodes_table(text)
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


USAGE_RE = re.compile(r"^\s*(?P<used>[\d.]+)(?P<uunit>[KMGT]?i?B)?/(?P<total>[\d.]+)(?P<tunit>[KMGT]?i?B)? "
                      r"(?P<name>\S+)(?: \((?P<pg_used>[\d.]+) used of (?P<pg_reserved>[\d.]+) reserved in "
                      r"placement groups\))?\s*$")


@dataclass(frozen=True)
class RayUsage:
    """One `Usage:` line of `ray status`: `1.0/2.0 GPU (1.0 used of 2.0 reserved in placement groups)`."""

    name: str
    used: float
    total: float
    pg_used: float | None = None
    pg_reserved: float | None = None
    line: str = ""


@dataclass(frozen=True)
class RayStatus:
    """What `ray status` says of the cluster: nodes (active, pending, recent failures), resource usage, demands."""

    active: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()
    usage: dict[str, RayUsage] = field(default_factory=dict)
    demands: tuple[str, ...] = ()
    """Resource requests no node can meet now (`{'GPU': 1.0}: 1+ pending tasks/actors`): why a placement group waits."""

    @property
    def gpus_all_taken(self) -> bool:
        """Every GPU of the cluster is in use or reserved (a new engine's placement group would wait)."""
        gpu = self.usage.get("GPU")
        return gpu is not None and gpu.total > 0 and gpu.used >= gpu.total


def parse_ray_status(text: str) -> RayStatus:
    """`ray status` (the `Active:` format of Ray 2.x; `Total Usage:`/`Total Demands:` of newer releases too).

    >>> s = parse_ray_status("Node status\\n----\\nActive:\\n 1 node_5373\\nPending:\\n (no pending nodes)\\n"
    ...                      "Recent failures:\\n (no failures)\\n\\nResources\\n----\\nUsage:\\n 0.0/256.0 CPU\\n"
    ...                      " 2.0/2.0 GPU (2.0 used of 2.0 reserved in placement groups)\\n 0B/311.15GiB memory\\n\\n"
    ...                      "Demands:\\n {'GPU': 1.0}: 1+ pending tasks/actors (1+ using placement groups)\\n")
    >>> s.active, s.gpus_all_taken, s.usage["GPU"].pg_reserved, s.demands
    (('node_5373',), True, 2.0, ("{'GPU': 1.0}: 1+ pending tasks/actors (1+ using placement groups)",))
    >>> parse_ray_status("Resources\\n----\\nTotal Usage:\\n 2.0/2.0 GPU (2.0 used of 2.0 reserved in placement "
    ...                  "groups)\\nPending Demands:\\n"
    ...                  " {'GPU': 1.0} * 2 (PACK): 1+ pending placement groups\\n").demands
    ("{'GPU': 1.0} * 2 (PACK): 1+ pending placement groups",)
    """
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or set(stripped) <= {"-", "="} or stripped.startswith("======"):
            continue
        if not line.startswith(" ") and stripped.endswith(":"):
            # Ray's v2 autoscaler heads its demands `Pending Demands:` (the v1 one `Demands:`/`Total Demands:`)
            current = stripped[:-1].removeprefix("Total ").lower().replace("pending demands", "demands")
            sections.setdefault(current, [])
        elif current and line.startswith(" "):
            sections[current].append(stripped)
    if not sections:
        raise ParseError("ray status", "no `Active:`/`Usage:` section", text[:200])

    def entries(name: str) -> tuple[str, ...]:
        return tuple(e for e in sections.get(name, []) if not e.startswith("(no "))

    usage = {}
    for line in sections.get("usage", []):
        if m := USAGE_RE.match(line):
            usage[m["name"]] = RayUsage(m["name"], float(m["used"]), float(m["total"]),
                                        float(m["pg_used"]) if m["pg_used"] else None,
                                        float(m["pg_reserved"]) if m["pg_reserved"] else None, line)
    active = tuple(e.split(None, 1)[-1] for e in entries("active"))
    pending = tuple(e.split(None, 1)[-1] for e in entries("pending"))
    return RayStatus(active, pending, entries("recent failures"), usage, entries("demands"))
