"""Measure an agentic grid against one endpoint through its engine adapter, each cell at most once per run.

`AgenticRunner.measure(cell)` is memoised (a cell test and the gate tests share one measurement) and a
prompt is built once for both modes. A prompt the server refuses is a measured, failed cell (its outcome
names the cause: `context_limit` when the served context is shorter than the inventory declares); a cell
whose request could not be made at all (the endpoint stopped answering, the time budget was spent) keeps
its error and asking for it again raises `CellNotMeasured`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from ..engines.base import EngineAdapter, StreamedChat
from ..grid import GateVerdict, GridCells, grid_name, pass_gates, prompt_text
from ..inventory import AgenticSpec
from ..io.answers import ChatCompletion, checked, parse_json
from ..toolcalls.validate import Answer
from .grid import (
    AgenticCell,
    AgenticPrompt,
    AgenticResult,
    ToolsTokenCounter,
    build_prompt,
    plan_cells,
    prompt_token_offenders,
    request_body,
    validity_gate,
)
from .scorer import score_call, score_http_failure

CHECK_PREFIX = "accuracy.agentic"
LABELS = {"exact": "pass", "distractor": "distr.", "context_limit": "ctx limit", "http_error": "HTTP err",
          "invalid": "invalid", "extra_calls": "extra", "wrong_tool": "wrong tool", "not_exact": "not exact",
          "split": "split", "wrong_argument": "wrong arg", "wrong_value": "MISS", "missing_argument": "no arg",
          "not_retrieval": "echo/overlong"}


class AgenticRunner(GridCells[AgenticCell, AgenticResult]):
    """Measures one [[agentic]] grid of one endpoint."""

    kind = "agentic"
    label = "agentic"
    check_prefix = CHECK_PREFIX

    def __init__(self, spec: AgenticSpec, adapter: EngineAdapter, count: ToolsTokenCounter,
                 progress: Callable[[str], None] = lambda line: None):
        super().__init__(spec, adapter.spec, plan_cells(spec, adapter.spec.max_model_len), progress)
        self.adapter, self.count = adapter, count
        self._prompts: dict[tuple, AgenticPrompt] = {}

    @property
    def grid(self) -> str:
        return grid_name(self.spec)

    def judge(self, results: Sequence[AgenticResult]) -> list[GateVerdict]:
        """The two pass gates (every cell up to N, overall rate) under `accuracy.agentic`, and the validity gate."""
        return [*pass_gates(self.spec, results, CHECK_PREFIX),
                validity_gate(self.spec, results, f"{CHECK_PREFIX}.min_valid")]

    def _prompt(self, cell: AgenticCell) -> AgenticPrompt:
        key = (cell.kind, cell.length, cell.depth)
        if key not in self._prompts:
            self._prompts[key] = build_prompt(self.spec, cell, self.count)
        return self._prompts[key]

    def _result(self, cell: AgenticCell, error: str | None = None) -> AgenticResult:
        return AgenticResult(cell, error=error)

    def _line(self, result: AgenticResult, took_s: float) -> str:
        verdict = "error" if result.error else ("pass" if result.is_pass else f"MISS ({result.outcome})")
        return (f"{verdict} ({result.prompt_tokens} prompt tokens, {took_s:.1f} s): expected "
                f"{result.expected[:60]!r}, got {result.observed[:80]}")

    def _fill(self, cell: AgenticCell, result: AgenticResult) -> None:
        prompt = self._prompt(cell)
        needle = prompt.transcript.needle
        result.prompt_sha256, result.expected = prompt.sha256, needle.value
        result.calibrated_tokens, result.n_steps, result.actual_depth = \
            prompt.calibrated_tokens, prompt.n_steps, prompt.actual_depth
        body = request_body(self.spec, prompt)
        began = time.monotonic()
        if cell.mode == "stream":
            status, streamed = self.adapter.chat_stream(body)
            result.elapsed_s = round(time.monotonic() - began, 3)
            if status != 200 or not isinstance(streamed, StreamedChat):
                result.scored(score_http_failure(status, str(streamed)))
                return
            answer, usage = Answer.from_stream(streamed), streamed.usage or {}
        else:
            response = self.adapter.chat(body)
            result.elapsed_s = round(time.monotonic() - began, 3)
            if response.status_code != 200:
                result.scored(score_http_failure(response.status_code, response.text))
                return
            what = f"[{self.adapter.spec.name}] POST /v1/chat/completions"
            data = checked(ChatCompletion, parse_json(response.text, what), what)
            answer, usage = Answer.from_completion(data), data.get("usage") or {}
        result.prompt_tokens, result.finish_reason = usage.get("prompt_tokens"), answer.finish_reason
        result.completion_tokens = answer.completion_tokens
        result.scored(score_call(answer, needle, max_tokens=self.spec.max_tokens, tools=prompt.tools,
                                 is_stream=cell.mode == "stream", prompt=prompt_text(body.get("messages") or [])))

    def document(self) -> dict:
        """The grid JSON (shaped for `llmval.grid.report`): spec, every measured cell, summary, gates if complete."""
        measured = [self.results[c.id] for c in self.cells if c.id in self.results]
        ok = [r for r in measured if r.error is None]
        complete = len(ok) == len(self.cells)
        outcomes: dict[str, int] = {}
        for r in ok:
            outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
        return {
            "schema_version": 1,
            "artefact": "agentic",
            "title": "Agentic tool calls",
            "grid": self.grid,
            **self._document_head(complete),
            "panels": [[m, k] for m in self.spec.modes for k in self.spec.needles],
            "cells": [{"id": r.cell.id, "variant": r.cell.mode, "kind": r.cell.kind, "length": r.cell.length,
                       "depth": r.cell.depth, "target_tokens": r.cell.target_tokens, "is_pass": r.is_pass,
                       "pass_rate": r.pass_rate, "error": r.error, "label": LABELS.get(r.outcome, r.outcome),
                       "trials": [{k: v for k, v in dataclasses.asdict(r).items() if k != "cell"}]}
                      for r in measured],
            "summary": {
                "cells": len(self.cells),
                "measured": len(ok),
                "passed": sum(r.is_pass for r in ok),
                "pass_rate": round(sum(r.is_pass for r in ok) / len(ok), 4) if ok else None,
                "outcomes": dict(sorted(outcomes.items())),
                "prompt_token_offenders": prompt_token_offenders(self.spec, ok),
            },
            "gates": [dataclasses.asdict(v) for v in self.judge(ok)] if complete else None,
        }

