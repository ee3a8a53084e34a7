"""A grid kind, declared once: what the one grid plugin (fixtures/grids.py) and the session need to run it.

    NIAH = GridKind(name="niah", section="niah", plan_cells=plan_cells, make_runner=make_runner,
                    facts={"min_overall": ("accuracy.niah.min_overall",), ...}, settings=frozenset({"seed", ...}))

`name` prefixes its fixtures (`niah_cell`, `niah_grid`, `niah_spec`, `niah_endpoint`, `niah_result`,
`niah_measured`, `niah_gates`), its report files (`reports/niah-<grid>.json`, `.png`) and its progress lines;
`section` is the inventory's list of its specs (`[[niah]]`); `plan_cells(spec, max_model_len)` lists the cells
(ValueError when a grid has none to run); `make_runner(spec, endpoint, client, progress)` makes the grid's
`GridCells` runner, which builds, asks and scores each cell and judges the gates (check ids
`<runner.check_prefix>.*`); `facts` maps each field of its section that states a fact to the check ids judging
it and `settings` lists the fields that only say how to run it (`llmval.report.judged`: no green by omission, and a
self-test that every field is in exactly one). Kinds are listed in `llmval.grid_kinds.GRID_KINDS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from ..inventory import EndpointSpec, Inventory

Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class GridKind:
    """One kind of accuracy grid (NIAH, agentic tool calls)."""

    name: str
    section: str
    plan_cells: Callable[[Any, int | None], list]
    make_runner: Callable[[Any, EndpointSpec, httpx.Client, Progress], Any]
    facts: Mapping[str, tuple[str, ...]]
    settings: frozenset[str]

    def specs(self, inventory: Inventory) -> Sequence[Any]:
        """The inventory's `[[section]]` grids of this kind."""
        return getattr(inventory, self.section)
