"""Accuracy grids, whatever their kind: the pure logic every grid shares.

A grid is a list of cells (context length × depth × what the kind varies) measured against one endpoint, each
cell at most once per run, then judged by gates from the inventory. This package holds what does not depend on
the kind: the lengths and each cell's budget and the smoke cells (`cells`), measuring cells once on one clock and
budget (`GridCells`), the pass gates (`gates`), seeded prompts fitted to a budget with the server's own tokenizer
(`fit`, `server`), the grid JSON and heatmap (`report`), one run's runners (`GridSession`) and the declaration of
a kind (`GridKind`). A kind (`llmval.needle`, `llmval.agentic`) keeps only its own: how a cell's prompt is built,
asked and scored. The kinds are listed in `llmval.grid_kinds.GRID_KINDS`; the one pytest plugin
(fixtures/grids.py) wires each of them.

May import `llmval.core`, `llmval.io`, the inventory models and `llmval.engines`; never a kind's package (the
kinds import this one; only `llmval.grid_kinds`, above them, imports them).
"""

from .cells import (
    CellNotMeasured,
    GridCells,
    context_lengths,
    default_context_lengths,
    grid_name,
    is_smoke_cell,
    target_tokens,
)
from .fit import BudgetError, TokenCounter, derive_seed, fit_units, prompt_sha256
from .gates import GateVerdict, pass_gates
from .kinds import GridKind
from .report import render_heatmap, write_grid_json
from .retrieval import copied_words, generated_text, not_a_retrieval, prompt_text
from .server import Answer, ServerTokenCounter, ask
from .session import GridSession

__all__ = [
    "Answer",
    "BudgetError",
    "CellNotMeasured",
    "GateVerdict",
    "GridCells",
    "GridKind",
    "GridSession",
    "ServerTokenCounter",
    "TokenCounter",
    "ask",
    "context_lengths",
    "copied_words",
    "default_context_lengths",
    "derive_seed",
    "fit_units",
    "generated_text",
    "grid_name",
    "is_smoke_cell",
    "not_a_retrieval",
    "pass_gates",
    "prompt_sha256",
    "prompt_text",
    "render_heatmap",
    "target_tokens",
    "write_grid_json",
]
