"""Tool-call validity and accuracy: a deterministic catalogue of tool schemas (`catalogue.py`), a judge
for one answer (`validate.py`: JSON, jsonschema, truncation, markup leaks, stream parity) and the sweep that
tallies rates per category (`sweep.py`). A streamed answer is joined by the engine adapter that streams it
(`llmval.engines.stream.join_chat_stream`), as an OpenAI client joins it."""

from __future__ import annotations

from .catalogue import CATEGORIES, MARKUP_SENTINELS, ExpectedCall, ToolCase, build_catalogue, tricky_text
from .sweep import SweepResult, Tally, run_case, run_sweep
from .validate import Answer, Problem, Verdict, judge

__all__ = [
    "CATEGORIES",
    "MARKUP_SENTINELS",
    "Answer",
    "ExpectedCall",
    "Problem",
    "SweepResult",
    "Tally",
    "ToolCase",
    "Verdict",
    "build_catalogue",
    "judge",
    "run_case",
    "run_sweep",
    "tricky_text",
]
