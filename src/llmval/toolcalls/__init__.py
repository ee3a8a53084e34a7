"""Tool-call validity and accuracy: a deterministic catalogue of tool schemas (`catalogue.py`), a judge
for one answer (`validate.py`: JSON, jsonschema, truncation, markup leaks, stream parity), the stream
joiner (`stream.py`) and the sweep that tallies rates per category (`sweep.py`)."""

from __future__ import annotations

from .catalogue import CATEGORIES, MARKUP_SENTINELS, ExpectedCall, ToolCase, build_catalogue, tricky_text
from .stream import join_chat_stream
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
    "join_chat_stream",
    "judge",
    "run_case",
    "run_sweep",
    "tricky_text",
]
