"""The runners of one kind of accuracy grid in one run: one runner per grid, made when a cell first asks for it,
measured at most once, its JSON and heatmap written when its gates are judged and at the end of the run, its HTTP
clients closed. The grid plugin (fixtures/grids.py) only wires it, once per kind.

    >>> session = GridSession(NIAH, inventory, reports_dir=Path("reports"))
    >>> session.runner("local-vllm").measure(cell)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ..inventory import EndpointSpec, Inventory
from ..io.http import endpoint_client
from .cells import CellNotMeasured, grid_name
from .kinds import GridKind
from .report import render_heatmap, write_grid_json


class GridSession:
    """The runners of the inventory's `[[kind]]` grids for one run."""

    def __init__(self, kind: GridKind, inventory: Inventory, *, reports_dir: Path, recorder: Any = None,
                 replay: Any = None, in_worker: bool = False, say: Callable[[str], None] = lambda line: None,
                 progress: Callable[[str], None] = lambda line: None):
        self.kind, self.specs = kind, list(kind.specs(inventory))
        self.inventory, self.reports_dir, self.recorder, self.replay = inventory, reports_dir, recorder, replay
        self.in_worker, self.say, self.progress = in_worker, say, progress
        self.runners: dict[str, Any] = {}
        self._clients: list[httpx.Client] = []

    def spec(self, grid: str) -> Any:
        for spec in self.specs:
            if grid_name(spec) == grid:
                return spec
        raise KeyError(f"no [[{self.kind.section}]] grid {grid!r}")

    def endpoint(self, spec: Any) -> EndpointSpec:
        """The grid's endpoint; a grid's own request_timeout_s (where its section has one) replaces the
        endpoint's, so a long cell's error names the grid's limit."""
        endpoint = self.inventory.endpoint(spec.endpoint)
        timeout = getattr(spec, "request_timeout_s", None)
        return endpoint if timeout is None else endpoint.model_copy(update={"request_timeout_s": timeout})

    def runner(self, grid: str) -> Any:
        if grid not in self.runners:
            spec = self.spec(grid)
            endpoint = self.endpoint(spec)
            client = endpoint_client(endpoint, recorder=self.recorder, replay=self.replay)
            self._clients.append(client)
            self.runners[grid] = self.kind.make_runner(spec, endpoint, client, self.progress)
        return self.runners[grid]

    def measure_grid(self, grid: str) -> list:
        """Every cell of `grid`, measured (the missing ones now); its reports written, whatever happened."""
        if self.in_worker:
            raise CellNotMeasured(f"[{grid}] {self.kind.name} gates judge the whole grid in one process; under "
                                  "xdist every worker would measure it again: run them without xdist "
                                  "(`pytest -m accuracy -p no:xdist`)")
        runner = self.runner(grid)
        try:
            return runner.measure_all()
        finally:
            if runner.results:
                self.write_reports(runner)

    def write_reports(self, runner: Any) -> list[str]:
        """Write the grid JSON and heatmap of `runner`; return their paths."""
        document = runner.document()
        return [str(write_grid_json(document, self.reports_dir)), str(render_heatmap(document, self.reports_dir))]

    def finish(self) -> None:
        """Write the reports of every grid this run measured anything of, and say where they are."""
        for grid, runner in self.runners.items():
            if runner.results:
                paths = ", ".join(self.write_reports(runner))
                failed = sum(1 for r in runner.results.values() if r.error is not None)
                self.say(f"{self.kind.name} {grid}: {len(runner.results) - failed}/{len(runner.cells)} cells measured"
                         + (f" ({failed} could not be)" if failed else "")
                         + f" in {runner.measure_s:.0f} s; reports: {paths}")

    def close(self) -> None:
        for client in self._clients:
            client.close()
