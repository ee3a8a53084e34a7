"""Needle in a haystack: deterministic, judge-free long-context retrieval checks (the `niah` grid kind).

Prompts are built from a seed (`builder`), fitted to a token budget with the server's own tokenizer
(`llmval.grid.ServerTokenCounter`), scored strictly with RULER's substring score kept alongside (`scorer`),
planned as a grid of (variant, value kind, length, depth) cells (`grid`), measured cell by cell and judged by
the grid's pass gates (`runner`), declared for the grid plugin in `kind`; what every grid shares (cells measured
once, gates, reports, the session) is `llmval.grid`'s.
"""

from .builder import Case, Needle, hard_case, plain_case, prefix_case, whitespace_token_count
from .grid import Cell, CellResult, TrialResult, build_trial, observed, plan_cells
from .kind import NIAH
from .runner import NiahRunner
from .scorer import Score, candidates, ruler_string_match_all, score_answer

__all__ = [
    "NIAH",
    "Case",
    "Cell",
    "CellResult",
    "Needle",
    "NiahRunner",
    "Score",
    "TrialResult",
    "build_trial",
    "candidates",
    "hard_case",
    "observed",
    "plain_case",
    "plan_cells",
    "prefix_case",
    "ruler_string_match_all",
    "score_answer",
    "whitespace_token_count",
]
