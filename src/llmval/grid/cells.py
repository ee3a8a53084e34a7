"""A grid's cells: which lengths it runs, each cell's budget, smoke cells, and measuring each cell at most once.

Every grid kind plans its cells over the same lengths (its `context_lengths`, else a spread up to the served
`max_model_len`), fits each cell's prompt to the same budget (`target_tokens`), runs in smoke the cells whose
length is in its `smoke_context_lengths`, and measures through `GridCells`: one clock and time budget per grid,
one progress line per cell, each cell at most once per run, a cell that could not be measured keeping its error.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from ..core.errors import LlmvalError
from ..inventory import EndpointSpec

DEFAULT_MIN_LENGTH = 1024
DEFAULT_MAX_CELLS_LENGTHS = 7


class GridSpec(Protocol):
    """What every grid kind's inventory section has (`NiahSpec`, `AgenticSpec`)."""

    endpoint: str
    name: str
    context_lengths: list[int]
    smoke_context_lengths: list[int]
    max_tokens: int
    margin_tokens: int
    budget_s: float | None


class HasCell(Protocol):
    """A planned cell: its grid, its id (the pytest id) and its context length."""

    grid: str
    length: int

    @property
    def id(self) -> str: ...


def grid_name(spec: GridSpec) -> str:
    """The grid's id prefix: the endpoint name, plus the spec's name if it has one."""
    return f"{spec.endpoint}-{spec.name}" if spec.name else spec.endpoint


def default_context_lengths(max_model_len: int) -> list[int]:
    """Powers of two from 1k below max_model_len, then max_model_len itself; at most 7, longest kept."""
    lengths = [2**k for k in range(10, 40) if DEFAULT_MIN_LENGTH <= 2**k < max_model_len]
    return [*lengths, max_model_len][-DEFAULT_MAX_CELLS_LENGTHS:]


def context_lengths(kind: str, spec: GridSpec, max_model_len: int | None) -> list[int]:
    """The grid's lengths: its own, sorted, else the default spread; ValueError when it has none to run."""
    if spec.context_lengths:
        return sorted(spec.context_lengths)
    if max_model_len is not None:
        return default_context_lengths(max_model_len)
    raise ValueError(f"{kind} grid '{grid_name(spec)}': no context_lengths and the endpoint declares no "
                     "max_model_len; declare one of them in the inventory")


def target_tokens(spec: GridSpec, length: int, max_model_len: int | None) -> int:
    """The prompt budget of a cell: its length, capped so that the answer still fits max_model_len."""
    if max_model_len is None:
        return length
    return min(length, max_model_len - spec.max_tokens - spec.margin_tokens)


def is_smoke_cell(spec: GridSpec, cell: HasCell) -> bool:
    """True when the cell also runs in smoke: its length is one of the grid's `smoke_context_lengths`."""
    return cell.length in spec.smoke_context_lengths


class CellNotMeasured(LlmvalError):
    """A grid cell could not be measured: the endpoint failed, or the grid's time budget was spent. `reason` is
    the cell's own error (the same for every cell a missing answer or a down endpoint stopped), so the reports
    count those cells under one root cause."""

    def __init__(self, message: str, *, reason: str = ""):
        super().__init__(message)
        self.reason = reason


class HasError(Protocol):
    cell: Any
    error: str | None


CellT = TypeVar("CellT", bound=HasCell)
ResultT = TypeVar("ResultT", bound=HasError)


class GridCells(Generic[CellT, ResultT]):
    """A grid's cells, each measured at most once per run. A kind's runner sets `kind` (its inventory section:
    progress lines and the budget's key) and `label` (messages), calls `__init__`, and says how one cell is
    measured (`_fill`, raising LlmvalError when it cannot be), how an unmeasured one is recorded (`_result`),
    its progress line (`_line`) and its gates (`judge`), and sets `check_prefix`."""

    kind: str
    label: str
    check_prefix: str
    """The kind's check ids start with it (`accuracy.niah`): its gates' and its tests' checks."""

    def __init__(self, spec: Any, endpoint: EndpointSpec, cells: Sequence[CellT],
                 progress: Callable[[str], None] = lambda line: None):
        self.spec, self.endpoint, self.cells, self.progress = spec, endpoint, list(cells), progress
        self.results: dict[str, ResultT] = {}
        self.started: dt.datetime | None = None
        self._started_monotonic: float | None = None
        self.measure_s = 0.0

    def _result(self, cell: CellT, error: str | None = None) -> ResultT:
        raise NotImplementedError

    def _fill(self, cell: CellT, result: ResultT) -> None:
        raise NotImplementedError

    def _line(self, result: ResultT, took_s: float) -> str:
        raise NotImplementedError

    def judge(self, results: Sequence[ResultT]) -> list:
        """The inventory's gates over a fully measured grid (`GateVerdict`s)."""
        raise NotImplementedError

    def cell(self, cell_id: str) -> CellT:
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        raise KeyError(f"no {self.label} cell {cell_id!r}")

    def _measure(self, cell: CellT) -> ResultT:
        """Measure one cell now, on the grid's clock (started by its first cell) and within its time budget."""
        if self._started_monotonic is None:
            self.started, self._started_monotonic = dt.datetime.now(dt.UTC), time.monotonic()
        elapsed = time.monotonic() - self._started_monotonic if self.results else 0.0
        at = f"{self.kind} {cell.id} [{self.cells.index(cell) + 1}/{len(self.cells)}]"
        budget = self.spec.budget_s
        if budget is not None and elapsed > budget:
            error = f"the grid's time budget ({budget:.0f} s, {self.kind}.budget_s) was spent before this cell"
            self.progress(f"{at}: not measured: {error}")
            return self._result(cell, error)
        result = self._result(cell)
        began = time.monotonic()
        try:
            self._fill(cell, result)
        except LlmvalError as error:
            result.error = str(error)
        took = time.monotonic() - began
        self.measure_s += took
        self.progress(f"{at}: {self._line(result, took)}" + (f" error {result.error[:200]}" if result.error else ""))
        return result

    def measure(self, cell: CellT) -> ResultT:
        """The cell's result, measuring it now if this run has not yet."""
        key = cell.id
        if key not in self.results:
            self.results[key] = self._measure(cell)
        result = self.results[key]
        if result.error is not None:
            raise CellNotMeasured(f"[{self.endpoint.name}] {self.label} cell {key}: {result.error}",
                                  reason=result.error)
        return result

    def measure_all(self) -> list[ResultT]:
        """Every cell (measuring the missing ones); raises if any could not be measured."""
        for cell in self.cells:
            if cell.id not in self.results:
                self.results[cell.id] = self._measure(cell)
        errors = {r.cell.id: r.error for r in self.results.values() if r.error is not None}
        if errors:
            shared = set(errors.values())
            failed = [f"{cell}: {error}" for cell, error in errors.items()]
            raise CellNotMeasured(f"[{self.endpoint.name}] {len(failed)} {self.label} cells could not be measured, "
                                  "so the grid's gates cannot be judged:\n  " + "\n  ".join(failed[:10]),
                                  reason=shared.pop() if len(shared) == 1 else "")
        return [self.results[c.id] for c in self.cells]

    def gates(self) -> list:
        """The inventory's gates over the whole grid (measuring what is missing)."""
        return self.judge(self.measure_all())

    def _document_head(self, complete: bool) -> dict:
        """The grid report's fields that every grid shares (the heatmap and status read them by name)."""
        return {
            "endpoint": self.endpoint.name,
            "base_url": str(self.endpoint.base_url),
            "model": self.endpoint.model,
            "max_model_len": self.endpoint.max_model_len,
            "spec": self.spec.model_dump(mode="json"),
            "started": self.started.isoformat(timespec="seconds") if self.started else None,
            "measure_s": round(self.measure_s, 1),
            "complete": complete,
            "lengths": sorted({c.length for c in self.cells}),
            "depths": sorted({c.depth for c in self.cells}),  # type: ignore[attr-defined]
        }
