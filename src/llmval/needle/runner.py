"""Measure a NIAH grid against one endpoint, cell by cell, each cell at most once per run.

`NiahRunner.measure(cell)` is memoised, so a cell test and a gate test that both need a cell cost one
measurement; the gate measures whatever the cell tests did not (e.g. under `-k`). A cell that cannot be
measured (endpoint error, time budget spent) keeps its error, and asking for it again raises it again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import httpx

from ..engines import adapter_class
from ..grid import GateVerdict, GridCells, TokenCounter, ask, pass_gates, prompt_text
from ..inventory import EndpointSpec, NiahSpec
from .grid import Cell, CellResult, TrialResult, build_trial, plan_cells, prompt_token_offenders, prompts_fingerprint
from .scorer import ruler_aggregate, score_answer


class NiahRunner(GridCells[Cell, CellResult]):
    """Measures one [[niah]] grid of one endpoint."""

    kind = "niah"
    label = "NIAH"
    check_prefix = "accuracy.niah"

    def __init__(self, spec: NiahSpec, endpoint: EndpointSpec, client: httpx.Client, count: TokenCounter,
                 progress: Callable[[str], None] = lambda line: None):
        super().__init__(spec, endpoint, plan_cells(spec, endpoint.max_model_len), progress)
        self.client, self.count = client, count
        self._units: dict[tuple, int] = {}

    def _result(self, cell: Cell, error: str | None = None) -> CellResult:
        return CellResult(cell, error=error)

    def _fill(self, cell: Cell, result: CellResult) -> None:
        for trial in range(self.spec.trials):
            result.trials.append(self._trial(cell, trial))

    def _line(self, result: CellResult, took_s: float) -> str:
        verdict = "error" if result.error else ("pass" if result.is_pass else
                                                ("NOT A RETRIEVAL" if result.not_retrieval else "MISS"))
        answers = "; ".join(f"expected {t.expected}, answered {_tail(t.answer)!r}" for t in result.trials)
        tokens = "/".join(str(t.prompt_tokens) for t in result.trials)
        return f"{verdict} ({tokens} prompt tokens, {took_s:.1f} s): {answers}"

    def judge(self, results: Sequence[CellResult]) -> list[GateVerdict]:
        """The two pass gates under `accuracy.niah`."""
        return pass_gates(self.spec, results, self.check_prefix)

    def _trial(self, cell: Cell, trial: int) -> TrialResult:
        shared_key = (cell.variant, cell.kind, cell.length, trial) if cell.variant == "prefix_cache" else None
        prompt = build_trial(self.spec, cell, trial, self.count,
                             n_units=self._units.get(shared_key) if shared_key else None)
        if shared_key:
            self._units.setdefault(shared_key, prompt.n_units)
        answer = ask(self.client, endpoint=self.endpoint.name, engine=adapter_class(self.endpoint),
                     model=self.endpoint.model, messages=prompt.messages, max_tokens=self.spec.max_tokens)
        score = score_answer(answer.content, prompt.expected, prompt.kind, prompt.planted,
                             prompt=prompt_text(prompt.messages), max_tokens=self.spec.max_tokens,
                             completion_tokens=answer.completion_tokens, generated=answer.generated)
        return TrialResult(trial=trial, seed=prompt.seed, prompt_sha256=prompt.sha256, expected=prompt.expected,
                           calibrated_tokens=prompt.calibrated_tokens, prompt_tokens=answer.prompt_tokens,
                           n_units=prompt.n_units, actual_depth=prompt.actual_depth, answer=answer.content,
                           finish_reason=answer.finish_reason, is_pass=score.is_pass, others=list(score.others),
                           ruler_score=score.ruler_score, elapsed_s=answer.elapsed_s,
                           completion_tokens=answer.completion_tokens, not_retrieval=score.not_retrieval)

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
            "gates": [dataclasses.asdict(v) for v in self.judge(ok)] if complete else None,
        }


def _tail(answer: str, limit: int = 60) -> str:
    """The end of an answer (where the value usually is), on one line."""
    text = " ".join(answer.split())
    return text if len(text) <= limit else "…" + text[-limit:]


def _cell_json(cell: Cell) -> dict:
    return {"id": cell.id, "variant": cell.variant, "kind": cell.kind, "length": cell.length, "depth": cell.depth,
            "target_tokens": cell.target_tokens}
