"""Run the catalogue against an endpoint, non-streamed and streamed, and tally rates per category.

Each failing sample is saved as JSON (request, status, response or joined stream with its raw events,
problems, a short excerpt) under `<reports>/toolcalls/<endpoint>/`, so a rate below its gate can be
read call by call. An endpoint that stops answering ends the sweep with EndpointError at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..engines.base import EngineAdapter
from ..io.answers import ChatCompletion, checked, parse_json
from .catalogue import CATEGORIES, ToolCase
from .validate import Answer, Problem, Verdict, excerpt, judge

AUTO_TOOL_ERROR_RE = re.compile(r"enable-auto-tool-choice|tool-call-parser|tool_call_parser", re.I)


@dataclass
class Tally:
    """Counts of one (variant, category) cell."""

    samples: int = 0
    valid: int = 0
    accurate: int = 0
    problems: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    """Up to three failure descriptions with their saved file names."""

    @property
    def validity(self) -> float | None:
        return self.valid / self.samples if self.samples else None

    @property
    def accuracy(self) -> float | None:
        return self.accurate / self.samples if self.samples else None

    def add(self, verdict: Verdict, saved: str | None) -> None:
        self.samples += 1
        self.valid += verdict.is_valid
        self.accurate += verdict.is_accurate
        for problem in verdict.problems:
            self.problems[problem.kind] = self.problems.get(problem.kind, 0) + 1
        if saved and len(self.examples) < 3:
            self.examples.append(f"{verdict.problems[0]} [{saved}]")


@dataclass
class SweepResult:
    """Tallies per (variant, category), plus the whole."""

    tallies: dict[tuple[str, str], Tally] = field(default_factory=dict)
    failures_dir: Path | None = None
    abort_hint: str = ""
    """What the engine's finish_reason "abort" means and where its owner looks (the adapter's `abort_hint`)."""

    def hint(self, cell: Tally, otherwise: str) -> str:
        """The engine's abort hint where the cell holds an abort (the cause comes first), else `otherwise`."""
        return self.abort_hint if cell.problems.get("engine_abort") and self.abort_hint else otherwise

    def cell(self, variant: str, category: str) -> Tally:
        return self.tallies.setdefault((variant, category), Tally())

    def table(self) -> list[dict]:
        """One row per cell, for the results JSON."""
        rows = []
        for (variant, category), t in sorted(self.tallies.items()):
            rows.append({"variant": variant, "category": category, "samples": t.samples, "valid": t.valid,
                         "accurate": t.accurate, "validity": _round(t.validity), "accuracy": _round(t.accuracy),
                         "problems": dict(sorted(t.problems.items()))})
        return rows


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _save(folder: Path | None, name: str, record: dict) -> str | None:
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    return str(path)


def run_case(adapter: EngineAdapter, case: ToolCase, *, variant: str, tool_choice: str,
             failures_dir: Path | None) -> list[tuple[str, Verdict, str | None]]:
    """The non-streamed and the streamed sample of one case: [(mode, verdict, saved path)]."""
    body = case.request(strict=variant == "strict", tool_choice=tool_choice)
    out: list[tuple[str, Verdict, str | None]] = []
    response = adapter.chat(body)
    reference = None
    if response.status_code != 200:
        verdict = _http_failure(response.status_code, response.text)
        record = {"response_status": response.status_code, "response": response.text[:20000]}
    else:
        what = f"[{adapter.spec.name}] POST /v1/chat/completions ({case.id})"
        data = checked(ChatCompletion, parse_json(response.text, what), what)
        verdict = judge(case, Answer.from_completion(data), max_tokens=case.max_tokens)
        # An aborted answer's calls (none, or half of one) are no reference: the stream is judged on its own.
        reference = None if verdict.is_engine_abort else verdict.calls
        record = {"response_status": 200, "response": data}
    saved = None
    if not verdict.is_accurate:
        saved = _save(failures_dir, f"{variant}-{case.id}-nonstream", _record(case, body, verdict, record))
    out.append(("nonstream", verdict, saved))
    status, streamed = adapter.chat_stream(body)
    if status != 200:
        verdict = _http_failure(status, str(streamed))
        record = {"response_status": status, "response": str(streamed)[:20000]}
    else:
        verdict = judge(case, Answer.from_stream(streamed), max_tokens=case.max_tokens, reference=reference)
        record = {"response_status": 200, "joined": {k: v for k, v in asdict(streamed).items() if k != "raw_events"},
                  "raw_events": streamed.raw_events[:400]}
    saved = None
    if not verdict.is_accurate:
        saved = _save(failures_dir, f"{variant}-{case.id}-stream", _record(case, body, verdict, record))
    out.append(("stream", verdict, saved))
    return out


def _http_failure(status: int, text: str) -> Verdict:
    kind = "parser_missing" if status == 400 and AUTO_TOOL_ERROR_RE.search(text) else "http_error"
    return Verdict(False, False, [Problem(kind, f"HTTP {status}", excerpt(text))])


def _record(case: ToolCase, body: dict, verdict: Verdict, response: dict) -> dict:
    return {"case": case.id, "category": case.category, "request": body,
            "expected": [asdict(e) for e in case.expected], **response,
            "problems": [asdict(p) for p in verdict.problems],
            "excerpt": verdict.problems[0].excerpt if verdict.problems else ""}


def run_sweep(adapter: EngineAdapter, cases: list[ToolCase], *, variants: list[str], tool_choice: str,
              failures_dir: Path | None = None, progress: Callable[[str], None] | None = None) -> SweepResult:
    """Every case × variant × (non-stream, stream); EndpointError propagates (the endpoint stopped answering)."""
    result = SweepResult(failures_dir=failures_dir, abort_hint=adapter.abort_hint)
    for variant in variants:
        for category in CATEGORIES:
            for case in (c for c in cases if c.category == category):
                for mode, verdict, saved in run_case(adapter, case, variant=variant, tool_choice=tool_choice,
                                                     failures_dir=failures_dir):
                    result.cell(variant, category).add(verdict, saved)
                    if progress is not None:
                        state = "ok" if verdict.is_accurate else ("valid" if verdict.is_valid else "INVALID")
                        progress(f"[toolcalls] {adapter.spec.name} {variant} {case.id} {mode}: {state}")
    return result
