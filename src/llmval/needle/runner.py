"""Measure a NIAH grid against one endpoint, cell by cell, each cell at most once per run.

`NiahRunner.measure(cell)` is memoised, so a cell test and a gate test that both need a cell cost one
measurement; the gate measures whatever the cell tests did not (e.g. under `-k`). A cell that cannot be
measured (endpoint error, time budget spent) keeps its error, and asking for it again raises it again.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import httpx

from ..core.errors import LlmvalError
from ..engines import adapter_class
from ..inventory import EndpointSpec, NiahSpec
from .builder import TokenCounter
from .grid import (
    Cell,
    CellResult,
    TrialResult,
    build_trial,
    evaluate_gates,
    plan_cells,
    prompt_token_offenders,
    prompts_fingerprint,
)
from .scorer import ruler_aggregate, score_answer
from .server import ask


class _HasId(Protocol):
    id: str


class _HasError(Protocol):
    cell: Any
    error: str | None


CellT = TypeVar("CellT", bound=_HasId)
ResultT = TypeVar("ResultT", bound=_HasError)


class CellNotMeasured(LlmvalError):
    """A grid cell (NIAH or agentic) could not be measured: the endpoint failed, or the grid's time budget was
    spent. `reason` is the cell's own error (the same for every cell a missing answer or a down endpoint
    stopped), so the reports count those cells under one root cause."""

    def __init__(self, message: str, *, reason: str = ""):
        super().__init__(message)
        self.reason = reason


class GridCells(Generic[CellT, ResultT]):
    """A grid's cells, each measured at most once per run (NIAH, agentic): a subclass sets `cells`, `results`,
    `endpoint` and `label`, and measures one cell in `_measure`; a cell that could not be measured keeps its
    error and asking for it again raises CellNotMeasured."""

    label: str
    cells: list[CellT]
    results: dict[str, ResultT]
    endpoint: EndpointSpec
    spec: Any
    started: dt.datetime | None
    measure_s: float

    def _measure(self, cell: CellT) -> ResultT:
        raise NotImplementedError

    def cell(self, cell_id: str) -> CellT:
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        raise KeyError(f"no {self.label} cell {cell_id!r}")

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
            "depths": sorted({c.depth for c in self.cells}),
        }


class NiahRunner(GridCells[Cell, CellResult]):
    """Measures one [[niah]] grid of one endpoint."""

    label = "NIAH"

    def __init__(self, spec: NiahSpec, endpoint: EndpointSpec, client: httpx.Client, count: TokenCounter,
                 progress: Callable[[str], None] = lambda line: None):
        self.spec, self.endpoint, self.client, self.count = spec, endpoint, client, count
        self.cells = plan_cells(spec, endpoint.max_model_len)
        self.results: dict[str, CellResult] = {}
        self.progress = progress
        self.started: dt.datetime | None = None
        self._started_monotonic: float | None = None
        self._units: dict[tuple, int] = {}
        self.measure_s = 0.0

    def _measure(self, cell: Cell) -> CellResult:
        if self._started_monotonic is None:  # the grid's clock starts with its first cell
            self.started, self._started_monotonic = dt.datetime.now(dt.UTC), time.monotonic()
        elapsed = time.monotonic() - self._started_monotonic if self.results else 0.0
        index = self.cells.index(cell) + 1
        if self.spec.budget_s is not None and elapsed > self.spec.budget_s:
            error = f"the grid's time budget ({self.spec.budget_s:.0f} s, niah.budget_s) was spent before this cell"
            self.progress(f"niah {cell.id} [{index}/{len(self.cells)}]: not measured: {error}")
            return CellResult(cell, error=error)
        result = CellResult(cell)
        began = time.monotonic()
        try:
            for trial in range(self.spec.trials):
                result.trials.append(self._trial(cell, trial))
        except LlmvalError as error:
            result.error = str(error)
        took = time.monotonic() - began
        self.measure_s += took
        verdict = "error" if result.error else ("pass" if result.is_pass else "MISS")
        answers = "; ".join(f"expected {t.expected}, answered {_tail(t.answer)!r}" for t in result.trials)
        tokens = "/".join(str(t.prompt_tokens) for t in result.trials)
        self.progress(f"niah {cell.id} [{index}/{len(self.cells)}]: {verdict} "
                      f"({tokens} prompt tokens, {took:.1f} s): {answers}"
                      + (f" error {result.error[:200]}" if result.error else ""))
        return result

    def _trial(self, cell: Cell, trial: int) -> TrialResult:
        shared_key = (cell.variant, cell.kind, cell.length, trial) if cell.variant == "prefix_cache" else None
        prompt = build_trial(self.spec, cell, trial, self.count,
                             n_units=self._units.get(shared_key) if shared_key else None)
        if shared_key:
            self._units.setdefault(shared_key, prompt.n_units)
        answer = ask(self.client, endpoint=self.endpoint.name, engine=adapter_class(self.endpoint),
                     model=self.endpoint.model, messages=prompt.messages, max_tokens=self.spec.max_tokens)
        score = score_answer(answer.content, prompt.expected, prompt.kind, prompt.planted)
        return TrialResult(trial=trial, seed=prompt.seed, prompt_sha256=prompt.sha256, expected=prompt.expected,
                           calibrated_tokens=prompt.calibrated_tokens, prompt_tokens=answer.prompt_tokens,
                           n_units=prompt.n_units, actual_depth=prompt.actual_depth, answer=answer.content,
                           finish_reason=answer.finish_reason, is_pass=score.is_pass, others=list(score.others),
                           ruler_score=score.ruler_score, elapsed_s=answer.elapsed_s)

    def document(self) -> dict:
        """The grid JSON: spec, every measured cell with its trials, summary, gates (when complete)."""
        measured = [self.results[c.id] for c in self.cells if c.id in self.results]
        ok = [r for r in measured if r.error is None]
        complete = len(ok) == len(self.cells)
        samples = [t.ruler_score for r in ok for t in r.trials]
        return {
            "schema_version": 1,
            "grid": self.cells[0].grid if self.cells else self.spec.endpoint,
            **self._document_head(complete),
            "cells": [{**_cell_json(r.cell), "is_pass": r.is_pass, "pass_rate": r.pass_rate, "error": r.error,
                       "trials": [dataclasses.asdict(t) for t in r.trials]} for r in measured],
            "summary": {
                "cells": len(self.cells),
                "measured": len(ok),
                "passed": sum(r.is_pass for r in ok),
                "pass_rate": round(sum(r.is_pass for r in ok) / len(ok), 4) if ok else None,
                "ruler_string_match_all": ruler_aggregate(samples) if samples else None,
                "prompts_fingerprint": prompts_fingerprint(ok),
                "prompt_token_offenders": prompt_token_offenders(self.spec, ok),
            },
            "gates": [dataclasses.asdict(v) for v in evaluate_gates(self.spec, ok)] if complete else None,
        }


def _tail(answer: str, limit: int = 60) -> str:
    """The end of an answer (where the value usually is), on one line."""
    text = " ".join(answer.split())
    return text if len(text) <= limit else "…" + text[-limit:]


def _cell_json(cell: Cell) -> dict:
    return {"id": cell.id, "variant": cell.variant, "kind": cell.kind, "length": cell.length, "depth": cell.depth,
            "target_tokens": cell.target_tokens}
