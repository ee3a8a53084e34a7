"""The runners of one kind of accuracy grid in one run (NIAH, agentic): one runner per grid, made when a cell
first asks for it, measured at most once, its JSON and heatmap written when its gates are judged and at the end
of the run, its HTTP clients closed. The pytest plugins (fixtures/accuracy.py, fixtures/agentic.py) only wire it.

    >>> session = GridSession("niah", inventory.niah, name_of=grid_name, make_runner=make, inventory=inventory,
    ...                       reports_dir=Path("reports"))
    >>> session.runner("local-vllm").measure(cell)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import httpx

from ..inventory import EndpointSpec, Inventory
from ..io.http import endpoint_client
from .report import render_heatmap, write_grid_json
from .runner import CellNotMeasured


class GridRunner(Protocol):
    """What a session needs of a grid's runner."""

    cells: list
    results: dict
    measure_s: float

    def measure_all(self) -> list: ...

    def document(self) -> dict: ...


Spec = TypeVar("Spec")
Runner = TypeVar("Runner", bound=GridRunner)


class GridSession(Generic[Spec, Runner]):
    """The runners of the inventory's `[[kind]]` grids for one run."""

    def __init__(self, kind: str, specs: Sequence[Spec], *, name_of: Callable[[Spec], str],
                 make_runner: Callable[[Spec, EndpointSpec, httpx.Client], Runner], inventory: Inventory,
                 reports_dir: Path, recorder: Any = None, replay: Any = None, in_worker: bool = False,
                 say: Callable[[str], None] = lambda line: None):
        self.kind, self.specs, self.name_of, self.make_runner = kind, list(specs), name_of, make_runner
        self.inventory, self.reports_dir, self.recorder, self.replay = inventory, reports_dir, recorder, replay
        self.in_worker, self.say = in_worker, say
        self.runners: dict[str, Runner] = {}
        self._clients: list[httpx.Client] = []

    def spec(self, grid: str) -> Spec:
        for spec in self.specs:
            if self.name_of(spec) == grid:
                return spec
        raise KeyError(f"no [[{self.kind}]] grid {grid!r}")

    def endpoint(self, spec: Spec) -> EndpointSpec:
        """The grid's endpoint; a grid's own request_timeout_s (where its section has one) replaces the
        endpoint's, so a long cell's error names the grid's limit."""
        endpoint = self.inventory.endpoint(spec.endpoint)  # type: ignore[attr-defined]
        timeout = getattr(spec, "request_timeout_s", None)
        return endpoint if timeout is None else endpoint.model_copy(update={"request_timeout_s": timeout})

    def runner(self, grid: str) -> Runner:
        if grid not in self.runners:
            spec = self.spec(grid)
            endpoint = self.endpoint(spec)
            client = endpoint_client(endpoint, recorder=self.recorder, replay=self.replay)
            self._clients.append(client)
            self.runners[grid] = self.make_runner(spec, endpoint, client)
        return self.runners[grid]

    def measure_grid(self, grid: str) -> list:
        """Every cell of `grid`, measured (the missing ones now); its reports written, whatever happened."""
        if self.in_worker:
            raise CellNotMeasured(f"[{grid}] {self.kind} gates judge the whole grid in one process; under xdist "
                                  "every worker would measure it again: run them without xdist "
                                  "(`pytest -m accuracy -p no:xdist`)")
        runner = self.runner(grid)
        try:
            return runner.measure_all()
        finally:
            if runner.results:
                self.write_reports(runner)

    def write_reports(self, runner: Runner) -> list[str]:
        """Write the grid JSON and heatmap of `runner`; return their paths."""
        document = runner.document()
        return [str(write_grid_json(document, self.reports_dir)), str(render_heatmap(document, self.reports_dir))]

    def finish(self) -> None:
        """Write the reports of every grid this run measured anything of, and say where they are."""
        for grid, runner in self.runners.items():
            if runner.results:
                paths = ", ".join(self.write_reports(runner))
                failed = sum(1 for r in runner.results.values() if r.error is not None)
                self.say(f"{self.kind} {grid}: {len(runner.results) - failed}/{len(runner.cells)} cells measured"
                         + (f" ({failed} could not be)" if failed else "")
                         + f" in {runner.measure_s:.0f} s; reports: {paths}")

    def close(self) -> None:
        for client in self._clients:
            client.close()
