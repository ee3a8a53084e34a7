"""Known blockers judged from a test's evidence: a failing blocked check is xfail, a passing one is "lifted".

At collection nobody knows which test states which check, so the verdict is taken after the test ran,
from the verdicts it stated: the last broken verdict is what failed the test; every held verdict
for a blocked check means the blocker no longer holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from fnmatch import fnmatchcase

from ..core.verdict import Cause, Verdict
from ..inventory import BlockerSpec, DecisionSpec
from .results import BlockerRecord

HOLDS = "holds"
LIFTED = "lifted"


@dataclasses.dataclass(frozen=True)
class BlockerVerdict:
    """What a test showed about one blocker."""

    blocker: BlockerSpec
    verdict: Verdict
    """The verdict that showed it."""
    state: str
    """HOLDS (the check still fails) or LIFTED (it passes now)."""

    def record(self) -> BlockerRecord:
        """What results.json keeps of it."""
        return BlockerRecord(id=self.blocker.id, check=self.verdict.check, target=self.verdict.target,
                             state=self.state, observed=self.verdict.observed)


def blocker_applies(blocker: BlockerSpec, verdict: Verdict, nodeid: str, marked: Iterable[str] = ()) -> bool:
    """True if `verdict` (stated by test `nodeid`) is a verdict on `blocker`'s check."""
    if not fnmatchcase(verdict.check, blocker.check):
        return False
    if blocker.subject and not fnmatchcase(verdict.target, blocker.subject):
        return False
    return not blocker.test or fnmatchcase(nodeid, blocker.test) or blocker.id in set(marked)


def judge(blockers: Iterable[BlockerSpec], verdicts: list[Verdict], nodeid: str, *, failed: bool,
          marked: Iterable[str] = ()) -> list[BlockerVerdict]:
    """The blocker verdicts of one test's call phase.

    failed=True: only the last broken verdict counts (it is the one that failed the test); a match is HOLDS.
    failed=False: every held verdict that matches a blocker is LIFTED.
    """
    blockers, marked = list(blockers), list(marked)
    if failed:
        broken = [v for v in verdicts if v.cause == Cause.BROKEN]
        if not broken:
            return []
        last = broken[-1]
        return [BlockerVerdict(b, last, HOLDS) for b in blockers if blocker_applies(b, last, nodeid, marked)][:1]
    shown = []
    for verdict in verdicts:
        if verdict.is_held:
            shown += [BlockerVerdict(b, verdict, LIFTED) for b in blockers
                      if blocker_applies(b, verdict, nodeid, marked)]
    return shown


def xfail_reason(verdict: BlockerVerdict) -> str:
    """The xfail reason pytest and junit show for a blocker that still holds."""
    return f"known blocker {verdict.blocker.id}: {verdict.blocker.reason}"


def lifted_message(verdicts: list[BlockerVerdict], decisions: Iterable[DecisionSpec]) -> str:
    """The failure message of a strict XPASS: which blocker lifted and which decision to revisit."""
    by_id = {d.id: d for d in decisions}
    lines = []
    for v in verdicts:
        decision = by_id.get(v.blocker.revisit)
        revisit = (f"{decision.id} ({decision.decision})" if decision else
                   (v.blocker.revisit or f"the decisions that worked around blocker {v.blocker.id}"))
        lines += [f"[XPASS(strict)] blocker lifted: revisit {revisit}",
                  f"  blocker {v.blocker.id}: {v.blocker.reason}",
                  f"  [{v.verdict.target}] {v.verdict.check} now passes",
                  f"    expected: {v.verdict.expected}",
                  f"    observed: {v.verdict.observed}",
                  f"  hint: confirm, revisit the decision, then remove [[blockers]] id = \"{v.blocker.id}\" "
                  "from the inventory"]
    return "\n".join(lines)


def reference_problems(blockers: Iterable[BlockerSpec], decisions: Iterable[DecisionSpec]) -> list[str]:
    """Inventory cross-references that do not resolve (a blocker's `revisit` naming no decision, duplicates)."""
    decision_ids = [d.id for d in decisions]
    blockers = list(blockers)
    problems = [f"blockers '{b.id}': revisit '{b.revisit}' is not a decision id; decisions: {decision_ids}"
                for b in blockers if b.revisit and b.revisit not in decision_ids]
    for kind, ids in (("decision", decision_ids), ("blocker", [b.id for b in blockers])):
        if dups := sorted({i for i in ids if ids.count(i) > 1}):
            problems.append(f"duplicate {kind} ids: {dups}")
    return problems
