"""Needle in a haystack: deterministic, judge-free long-context retrieval checks.

Prompts are built from a seed (`builder`), fitted to a token budget with the server's own tokenizer
(`server.ServerTokenCounter`), scored strictly with RULER's substring score kept alongside (`scorer`),
planned as a grid of (variant, value kind, length, depth) cells with gates from the inventory
(`grid`), measured cell by cell (`runner`), and reported as JSON and a heatmap (`report`).
"""

from .builder import (
    BudgetError,
    Case,
    Needle,
    derive_seed,
    fit_units,
    hard_case,
    plain_case,
    prefix_case,
    prompt_sha256,
    whitespace_token_count,
)
from .grid import Cell, CellResult, GateVerdict, TrialResult, build_trial, evaluate_gates, plan_cells
from .report import render_heatmap, write_grid_json
from .runner import CellNotMeasured, NiahRunner
from .scorer import Score, candidates, ruler_string_match_all, score_answer
from .server import Answer, ServerTokenCounter, ask
from .session import GridRunner, GridSession

__all__ = [
    "Answer",
    "BudgetError",
    "Case",
    "Cell",
    "CellNotMeasured",
    "CellResult",
    "GateVerdict",
    "GridRunner",
    "GridSession",
    "Needle",
    "NiahRunner",
    "Score",
    "ServerTokenCounter",
    "TrialResult",
    "ask",
    "build_trial",
    "candidates",
    "derive_seed",
    "evaluate_gates",
    "fit_units",
    "hard_case",
    "plain_case",
    "plan_cells",
    "prefix_case",
    "prompt_sha256",
    "render_heatmap",
    "ruler_string_match_all",
    "score_answer",
    "whitespace_token_count",
    "write_grid_json",
]
