"""What a run says about each check and each measured figure, as series: the one reading of a results document that
the Prometheus textfile (`llmval.report.prometheus`) and the trend page (`llmval.report.trend`) share.

    check_states(results)   # {(check, target): Cause}: the worst verdict of each check on each target
    figures(results)        # [Figure(name, target, unit, value, gate)]: every numeric measured value, with its gate

A check stated by several tests or cells on one target has one state, the worst (broken over could-not-check over
blocked over held). A failed or errored test that stated no verdict (a fixture's error) is a series of its own, under
its node id with no target, so that no failure is left out of a series.

A figure's gate is the bound of the one verdict its test stated on the same target, when the test measured one
numeric figure there and stated one bound: the perf gates write their expected value as `>= 12.4 tok/s ...` or
`<= 900 ms ...` (`llmval.load.Gates.bound`), the only wording read here (`BOUND_RE`). A figure measured beside
several bounds, or none, has no gate: the trend page draws it without one rather than against the wrong one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..core.verdict import Cause
from .results import RunResults

CAUSE_ORDER = (Cause.HELD, Cause.BLOCKED, Cause.COULD_NOT_CHECK, Cause.BROKEN)
"""Least to most severe: the state of a check several verdicts judged is the last of these among them."""
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
"""pytest's outcomes as results.json records them (`error`: could not check)."""
BOUND_RE = re.compile(r"^\s*(?P<op>>=|<=)\s*(?P<value>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")
"""A gate's bound at the start of a verdict's expected value, as `Gates.bound` writes it: `>= 250 tok/s`."""


@dataclass(frozen=True)
class Gate:
    """The bound a figure was judged against: `op` is `min` (the figure must be at least `value`) or `max`."""

    op: str
    value: float
    check: str


@dataclass(frozen=True)
class Figure:
    """One numeric value a run measured (tok/s, a pass rate, a latency), with the gate it was judged against."""

    name: str
    target: str
    unit: str
    value: float
    gate: Gate | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.name, self.target, self.unit

    @property
    def is_outside_gate(self) -> bool:
        if self.gate is None:
            return False
        return self.value < self.gate.value if self.gate.op == "min" else self.value > self.gate.value


def worst(causes: list[Cause]) -> Cause:
    """The most severe of `causes` (CAUSE_ORDER)."""
    return max(causes, key=CAUSE_ORDER.index)


def check_states(results: RunResults) -> dict[tuple[str, str], Cause]:
    """Each (check, target) the run judged, with its state: the worst verdict stated about it."""
    states: dict[tuple[str, str], list[Cause]] = {}
    for test in results.tests:
        for verdict in test.verdicts:
            states.setdefault((verdict.check, verdict.target), []).append(Cause(verdict.cause))
        if not test.verdicts and test.outcome in {"failed", "error"}:
            cause = Cause.BROKEN if test.outcome == "failed" else Cause.COULD_NOT_CHECK
            states.setdefault((test.nodeid, ""), []).append(cause)
    return {key: worst(causes) for key, causes in sorted(states.items())}


def number(value: object) -> float | None:
    """A measured value as a finite number, or None (a version string, a hash, NaN, a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def bound_of(expected: str) -> tuple[str, float] | None:
    """(`min` or `max`, value) of a gate's expected text (`>= 250 tok/s at C=16`), or None."""
    match = BOUND_RE.match(expected)
    if match is None:
        return None
    return ("min" if match["op"] == ">=" else "max"), float(match["value"])


def figures(results: RunResults) -> list[Figure]:
    """Every numeric measured value of the run, in test order, each with its gate where one verdict names it."""
    found: list[Figure] = []
    for test in results.tests:
        numeric = [(m, v) for m in test.measured if (v := number(m.value)) is not None]
        for measured, value in numeric:
            bounds = [(v.check, b) for v in test.verdicts if v.target == measured.target
                      and (b := bound_of(v.expected)) is not None]
            alone = sum(1 for m, _ in numeric if m.target == measured.target) == 1
            gate = Gate(bounds[0][1][0], bounds[0][1][1], bounds[0][0]) if alone and len(bounds) == 1 else None
            found.append(Figure(measured.name, measured.target, measured.unit, value, gate))
    return found
