"""The grid kinds this suite runs, in order; the grid plugin (fixtures/grids.py) wires each one, the judged-facts
list (`llmval.report.judged`) reads their targets. A new kind is its declaration (a `GridKind` beside its builder and
scorer) and one entry here.

The list sits above the kinds (`llmval.needle`, `llmval.agentic`), which sit above what every grid shares
(`llmval.grid`): the shared package never imports a kind (the layers in pyproject.toml's `[tool.importlinter]`).
"""

from __future__ import annotations

from .agentic.kind import AGENTIC
from .grid.kinds import GridKind
from .needle.kind import NIAH

__all__ = ["GRID_KINDS", "grid_kind"]

GRID_KINDS: tuple[GridKind, ...] = (NIAH, AGENTIC)


def grid_kind(name: str) -> GridKind:
    """The kind called `name`; KeyError naming the valid ones."""
    for kind in GRID_KINDS:
        if kind.name == name:
            return kind
    raise KeyError(f"unknown grid kind {name!r}; valid: {sorted(k.name for k in GRID_KINDS)}")
