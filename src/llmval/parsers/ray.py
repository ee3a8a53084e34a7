"""Ray node state from a machine format: `ray list nodes --format json` (State API) or `ray.nodes()` JSON.

    >>> nodes = parse_ray_nodes('[{"node_id":"a","node_ip":"192.168.200.1","state":"ALIVE",'
    ...                         '"is_head_node":true,"resources_total":{"GPU":1.0}}]')
    >>> nodes[0].is_alive, nodes[0].gpus
    (True, 1.0)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..core.errors import ParseError


@dataclass(frozen=True)
class RayNode:
    node_id: str
    ip: str
    is_alive: bool
    is_head: bool
    gpus: float
    state: str


def _json_start(text: str) -> str:
    """Ray may print log lines before the JSON; start at the first line that opens it."""
    for index, line in enumerate(text.splitlines()):
        if line.lstrip().startswith(("[", "{")):
            return "\n".join(text.splitlines()[index:])
    return text


def parse_ray_nodes(text: str) -> list[RayNode]:
    """Both shapes: State API (`state`, `node_ip`, `resources_total`) and `ray.nodes()` (`Alive`, `Resources`)."""
    try:
        data = json.loads(_json_start(text))
    except json.JSONDecodeError as error:
        raise ParseError("ray nodes JSON", f"not JSON ({error})", text[:200]) from None
    if isinstance(data, dict):  # dashboard REST envelope {"data": {"result": {"result": [...]}}}
        data = data.get("data", {}).get("result", {}).get("result", data.get("result"))
    if not isinstance(data, list):
        raise ParseError("ray nodes JSON", "expected a list of nodes", text[:200])
    nodes = []
    for entry in data:
        if "state" in entry:
            nodes.append(RayNode(str(entry.get("node_id", "")), str(entry.get("node_ip", "")),
                                 entry["state"] == "ALIVE", bool(entry.get("is_head_node")),
                                 float((entry.get("resources_total") or {}).get("GPU", 0)), entry["state"]))
        elif "Alive" in entry:
            nodes.append(RayNode(str(entry.get("NodeID", "")), str(entry.get("NodeManagerAddress", "")),
                                 bool(entry["Alive"]), False, float((entry.get("Resources") or {}).get("GPU", 0)),
                                 "ALIVE" if entry["Alive"] else "DEAD"))
        else:
            raise ParseError("ray nodes JSON", "node has neither `state` nor `Alive`", json.dumps(entry)[:200])
    return nodes
