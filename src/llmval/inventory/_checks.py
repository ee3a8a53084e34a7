"""Checks of a whole inventory that no single field can make: the shape of the raw TOML (nesting, sizes,
control characters in keys) before pydantic sees it, and the cross-references between sections after.

Both return `(key path, reason)` problems, so every message names where the problem is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._values import CONTROL_RE
from .launch import WATCH_RE

if TYPE_CHECKING:
    from . import Inventory

MAX_DEPTH = 12
"""The deepest real inventory nests 7 levels (hosts → [i] → proxmox → guests → [i] → bus_ids → [i])."""
MAX_ITEMS = 10_000
MAX_STRING = 20_000
MAX_KEY = 256
MAX_INT = 2**62


def raw_problems(data: dict, key_path) -> list[tuple[str, str]]:
    """Nesting depth, list and string sizes, huge integers and control characters in keys, found without
    recursion (a 600-deep array must give a message, not a RecursionError)."""
    problems: list[tuple[str, str]] = []
    stack: list[tuple[tuple, Any]] = [((), data)]
    while stack and len(problems) < 20:
        loc, node = stack.pop()
        if len(loc) > MAX_DEPTH:
            problems.append((key_path(loc[:MAX_DEPTH], data), f"nested deeper than {MAX_DEPTH} levels"))
            continue
        if isinstance(node, dict):
            if len(node) > MAX_ITEMS:
                problems.append((key_path(loc, data), f"{len(node)} keys; at most {MAX_ITEMS}"))
                continue
            for key, value in node.items():
                if len(key) > MAX_KEY or CONTROL_RE.search(key) or any(c in key for c in "\t\n\r"):
                    problems.append((key_path(loc, data), f"key {key[:80]!r}: control characters or longer "
                                     f"than {MAX_KEY} characters"))
                    continue
                stack.append(((*loc, key), value))
        elif isinstance(node, list):
            if len(node) > MAX_ITEMS:
                problems.append((key_path(loc, data), f"{len(node)} items; at most {MAX_ITEMS}"))
                continue
            stack.extend(((*loc, i), item) for i, item in enumerate(node))
        elif isinstance(node, str) and len(node) > MAX_STRING:
            problems.append((key_path(loc, data), f"a string of {len(node)} characters; at most {MAX_STRING}"))
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
            problems.append((key_path(loc, data), f"{node} is out of range (|n| <= 2^62)"))
    return sorted(problems)


def _dups(items: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(index, value) of every repeat after the first."""
    seen: set[str] = set()
    repeats = []
    for index, value in items:
        if value in seen:
            repeats.append((index, value))
        seen.add(value)
    return repeats


def reference_problems(inv: Inventory) -> list[tuple[str, str]]:
    """Names that must be unique are, and every name that refers to a host, endpoint or decision resolves."""
    hosts = {h.name: h for h in inv.hosts}
    endpoints = [e.name for e in inv.endpoints]
    decisions = [d.id for d in inv.decisions]
    problems: list[tuple[str, str]] = []

    def where(section: str, index: int, name: str, field: str) -> str:
        return f"{section}[{index}:{name}].{field}" if name else f"{section}[{index}].{field}"

    for section, names in (("hosts", [h.name for h in inv.hosts]), ("endpoints", endpoints),
                           ("decisions", decisions), ("blockers", [b.id for b in inv.blockers])):
        field = "id" if section in {"decisions", "blockers"} else "name"
        for index, name in _dups(list(enumerate(names))):
            problems.append((where(section, index, name, field), f"duplicate {field} {name!r}"))
    for index, host in enumerate(inv.hosts):
        health = host.gpus.health if host.gpus is not None else None
        log_via = getattr(health, "kernel_log_via", None)
        if log_via is not None and (log_via not in hosts or log_via == host.name):
            problems.append((where("hosts", index, host.name, "gpus.health.kernel_log_via"),
                             f"{log_via!r} is not another host; hosts: {sorted(hosts)}"))
        via = getattr(host.transport, "via", None)
        if via is None:
            continue
        at = where("hosts", index, host.name, "transport.via")
        if via == host.name:
            problems.append((at, "names the host itself"))
        elif via not in hosts:
            problems.append((at, f"{via!r} is not a host; hosts: {sorted(hosts)}"))
        elif hosts[via].transport.kind != "ssh":
            problems.append((at, f"{via!r} must be an ssh host (it is {hosts[via].transport.kind})"))
        for iface_index, name in _dups([(i, f.name) for i, f in enumerate(host.interfaces)]):
            problems.append((f"hosts[{index}:{host.name}].interfaces[{iface_index}].name", f"duplicate {name!r}"))
    launch = inv.launch
    background = [s for s in (launch.start if launch else []) if s.background]
    for index, ep in enumerate(inv.endpoints):
        if ep.host is not None and ep.host not in hosts:
            problems.append((where("endpoints", index, ep.name, "host"),
                             f"{ep.host!r} is not a host; hosts: {sorted(hosts)}"))
        if ep.logs == "launch" and not background:
            problems.append((where("endpoints", index, ep.name, "logs"),
                             "`launch` needs a [[launch.start]] step with background = true"))
        if ep.logs is not None and ep.host is None:
            problems.append((where("endpoints", index, ep.name, "logs"), "needs `host` (where the log is read)"))
    for section, gates in (("perf", inv.perf), ("niah", inv.niah), ("agentic", getattr(inv, "agentic", []))):
        for index, gate in enumerate(gates):
            if gate.endpoint not in endpoints:
                problems.append((f"{section}[{index}].endpoint",
                                 f"{gate.endpoint!r} is not an endpoint; endpoints: {endpoints}"))
    for index, label in _dups([(i, f"{g.endpoint}/{g.label}") for i, g in enumerate(inv.perf)]):
        problems.append((f"perf[{index}].name", f"{label!r} repeats: give each [[perf]] of an endpoint a name"))
    for section, grids in (("niah", inv.niah), ("agentic", getattr(inv, "agentic", []))):  # the grid kinds' sections
        for index, label in _dups([(i, f"{g.endpoint}/{g.name}") for i, g in enumerate(grids)]):
            problems.append((f"{section}[{index}].name",
                             f"{label!r} repeats: give each [[{section}]] of an endpoint a name"))
    if launch is not None:
        for phase in ("preflight", "start", "stop"):
            for index, step in enumerate(getattr(launch, phase)):
                at = f"launch.{phase}[{index}]"
                if step.host not in hosts:
                    problems.append((f"{at}.host", f"{step.host!r} is not a host; hosts: {sorted(hosts)}"))
                elif step.background and hosts[step.host].transport.kind != "local":
                    problems.append((f"{at}.background", "background steps run on local hosts only"))
        if launch.ready.endpoint not in endpoints:
            problems.append(("launch.ready.endpoint",
                             f"{launch.ready.endpoint!r} is not an endpoint; endpoints: {endpoints}"))
        for index, source in enumerate(launch.ready.watch):
            if (match := WATCH_RE.match(source)) and match["host"] and match["host"] not in hosts:
                problems.append((f"launch.ready.watch[{index}]", f"{match['host']!r} is not a host"))
    for index, blocker in enumerate(inv.blockers):
        if blocker.revisit and blocker.revisit not in decisions:
            problems.append((where("blockers", index, blocker.id, "revisit"),
                             f"{blocker.revisit!r} is not a decision id; decisions: {decisions}"))
    for name in inv.deployment.relevant_files:
        if name not in hosts:
            problems.append((f"deployment.relevant_files.{name}", f"{name!r} is not a host; hosts: {sorted(hosts)}"))
    return problems
