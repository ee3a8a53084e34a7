"""A grid's gates: one verdict per gate over a fully measured grid, the same two pass gates for every kind.

`pass_gates` judges any grid whose spec has `all_pass_up_to`/`min_overall` and whose results have `cell.length`,
`cell.id` and `is_pass`; a kind adds its own gates beside them (the agentic grid's `min_valid`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol


@dataclasses.dataclass(frozen=True)
class GateVerdict:
    """One gate's verdict over a measured grid."""

    check: str
    expected: str
    observed: str
    ok: bool
    offenders: tuple[str, ...] = ()


class PassGated(Protocol):
    all_pass_up_to: int | None
    min_overall: float


class Judged(Protocol):
    cell: Any

    @property
    def is_pass(self) -> bool: ...


def pass_gates(spec: PassGated, results: Sequence[Judged], check_prefix: str) -> list[GateVerdict]:
    """The two pass gates: every cell up to `all_pass_up_to` tokens passes (when declared); the overall pass
    rate is at least `min_overall`. Check ids are `<check_prefix>.all_pass_up_to` and `.min_overall`."""
    verdicts = []
    if spec.all_pass_up_to is not None:
        scope = [r for r in results if r.cell.length <= spec.all_pass_up_to]
        missed = tuple(r.cell.id for r in scope if not r.is_pass)
        verdicts.append(GateVerdict(f"{check_prefix}.all_pass_up_to",
                                    f"every cell up to {spec.all_pass_up_to} tokens passes ({len(scope)} cells)",
                                    f"{len(scope) - len(missed)}/{len(scope)} pass", not missed, missed))
    passed = sum(r.is_pass for r in results)
    rate = passed / len(results) if results else 0.0
    verdicts.append(GateVerdict(f"{check_prefix}.min_overall", f">= {spec.min_overall:.0%} of cells pass",
                                f"{rate:.1%} ({passed}/{len(results)})", bool(results) and rate >= spec.min_overall,
                                tuple(r.cell.id for r in results if not r.is_pass)))
    return verdicts
