"""Which checks a check depends on, as one graph that is a DAG by construction.

A verdict's `depends_on` names the checks that must hold for it to mean anything; the reports fold a failure under
the failing check it depends on and call the top of each chain its root cause. A cycle (`hosts.ready` needing
`hosts.reachable`, which waits on `hosts.ready`) would leave every failure some other's dependent and the run with
no root cause at all, so an edge that would close one is refused where it is declared: at collection
(`fixtures/evidence.py` declares every collected check's dependencies; a cycle there is a usage error naming it),
and when a verdict is made (`llmval.core.verdict`: the edge is left out of the verdict and kept in `refused`,
which the reports show as a warning). Edges are between check ids; `check@target` names the check `check`.
A check's dependency on itself on another target (an LXC container's `hosts.ready` on `hosts.ready@<its node>`) is
kept in the verdict and is no edge here: it cannot close a cycle, as a host's `via` names an ssh host, which has no
`via` of its own (the inventory refuses anything else).

    >>> graph = CheckGraph()
    >>> graph.declare("serving.health", ["serving.ready"])
    ()
    >>> graph.declare("serving.ready", ["serving.health", "hosts.ready@h1"])
    ('serving.health',)
    >>> graph.cycle_through("serving.ready", "serving.health")
    ['serving.ready', 'serving.health', 'serving.ready']
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


def check_of(dependency: str) -> str:
    """The check id a dependency names (`hosts.gpu.zombie_workers@h200` -> `hosts.gpu.zombie_workers`)."""
    return dependency.partition("@")[0]


class DependencyCycle(ValueError):
    """A declared dependency would close a cycle among the checks (the message names it)."""

    def __init__(self, cycle: list[str], where: str = ""):
        self.cycle = cycle
        super().__init__(f"check dependencies must not form a cycle{f' ({where})' if where else ''}: "
                         + " -> ".join(cycle) + " (a cycle leaves a failing run with no root cause; drop one of "
                         "these depends_on)")


class CheckGraph:
    """check -> the checks it depends on; every edge added keeps it acyclic."""

    def __init__(self) -> None:
        self._edges: dict[str, set[str]] = {}
        self._lock = threading.Lock()  # verdicts are made from worker threads too (the grids' pools)
        self.refused: list[tuple[str, str]] = []
        """(check, dependency) edges left out because they would have closed a cycle."""

    def clear(self) -> None:
        """Forget every edge (a new run in this process: pytester's in-process runs)."""
        with self._lock:
            self._edges.clear()
            self.refused.clear()

    def edges(self) -> dict[str, frozenset[str]]:
        with self._lock:
            return {check: frozenset(deps) for check, deps in self._edges.items()}

    def cycle_through(self, check: str, dependency: str) -> list[str] | None:
        """The cycle `check -> dependency -> ... -> check` adding that edge would close, else None."""
        path = self._path(check_of(dependency), check)
        return [check, *path] if path else None

    def _path(self, start: str, goal: str) -> list[str] | None:
        if start == goal:
            return [start]
        seen, stack = {start}, [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(self._edges.get(node, ())):
                if nxt == goal:
                    return [*path, nxt]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        return None

    def declare(self, check: str, depends_on: Iterable[str], *, strict: bool = False,
                where: str = "") -> tuple[str, ...]:
        """Add `check`'s dependencies (a dependency on itself means nothing and is dropped; on itself on a named
        target it is kept, no edge); return those kept, as given. An edge that would close a cycle raises
        DependencyCycle when `strict`, else is left out (and kept in `refused`)."""
        kept = []
        with self._lock:
            for dependency in dict.fromkeys(depends_on):
                target = check_of(dependency)
                if target == check and dependency.partition("@")[2]:
                    kept.append(dependency)  # the same check on another target: a container on its node
                    continue
                if target == check or not target:
                    continue
                if target in self._edges.get(check, ()):
                    kept.append(dependency)
                    continue
                path = self._path(target, check)
                if path:
                    if strict:
                        raise DependencyCycle([check, *path], where)
                    self.refused.append((check, dependency))
                    continue
                self._edges.setdefault(check, set()).add(target)
                kept.append(dependency)
        return tuple(kept)

    def is_acyclic(self) -> bool:
        """True when no check reaches itself (what `declare` keeps; a self-test asserts it over the contract)."""
        edges = self.edges()
        state: dict[str, int] = {}
        for root in edges:
            if state.get(root):
                continue
            stack = [(root, iter(sorted(edges.get(root, ()))))]
            state[root] = 1
            while stack:
                node, children = stack[-1]
                child = next(children, None)
                if child is None:
                    state[node] = 2
                    stack.pop()
                elif state.get(child) == 1:
                    return False
                elif not state.get(child):
                    state[child] = 1
                    stack.append((child, iter(sorted(edges.get(child, ())))))
        return True


CHECKS = CheckGraph()
"""The run's one graph of check dependencies (each process's: an xdist worker declares its own)."""
