"""Judge each probe's answer under load against the same probe's answers idle, and each gate over the probes.

What "unchanged" means (the decision; README "Correctness under load"): at temperature 0 an engine is not
batch-invariant (vLLM does not promise it: other requests in the batch change kernel shapes and float
reductions, so a token can flip), and a 135M model flips often. So by default (`compare = "judged"`) the judged
answer is compared, and only a change for the worse breaks a gate:

    perf.correctness.niah                 a needle found idle is still found under load
    perf.correctness.toolcalls.validity   a call valid idle is still valid under load (validity not lower)
    perf.correctness.toolcalls.values     a call with exactly the expected values idle still has them

`compare = "text"` also breaks on any other text (for an engine run batch-invariant). Every sample also counts
whether its text changed, whatever the mode, so the report says how often temperature 0 was not the same text.

A probe is judged only when it can be: the load held its concurrency during the ask (the load's time-weighted
mean in flight >= `HELD_SHARE` x C, and no load request failed), it was answered in every pass, its idle answer
was right (a wrong idle answer is no reference: nothing to lose), and its two idle answers agree (before and
after the load; else the change is not the load's). A gate is broken by any probe that got worse, could not
check when any probe was not held or not answered, or when no probe could be compared; otherwise it held.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..core.errors import LlmvalError
from .probes import ProbeAnswer

HELD_SHARE = 0.9
"""A probe counts as asked under load when the load's mean requests in flight over its ask were >= 0.9 x C."""



class NotJudged(LlmvalError):
    """A correctness-under-load gate could not be judged: the load did not hold its concurrency during an ask, a
    probe was not answered or its idle answers disagreed, or no probe was right idle (nothing to compare)."""


Status = Literal["kept", "worse", "text_changed", "no_reference", "unstable", "not_held", "error"]


@dataclass(frozen=True)
class ProbeSample:
    """One probe's answers: idle, under load (and how loaded the engine was meanwhile), idle again after."""

    probe_id: str
    kind: str
    concurrency: int
    idle: ProbeAnswer
    loaded: ProbeAnswer
    idle_after: ProbeAnswer | None
    in_flight: float
    """The load's time-weighted mean requests in flight during the loaded ask."""
    load_failures: tuple[str, ...] = ()
    """Errors of load requests that ended during the loaded ask."""
    engine_busy: float | None = None
    """The engine's own running + waiting requests at the start of the loaded ask (probe included; evidence)."""

    @property
    def is_held(self) -> bool:
        return self.in_flight >= HELD_SHARE * self.concurrency and not self.load_failures

    @property
    def is_text_changed(self) -> bool:
        return self.idle.error is None and self.loaded.error is None and self.idle.text != self.loaded.text

    @property
    def is_text_unstable_idle(self) -> bool:
        """The idle answer after the load differs in text from the one before it (then a text changed under load
        is not the load's: e.g. the first ask computed the prompt, later ones read it from the prefix cache)."""
        return (self.idle_after is not None and self.idle.error is None and self.idle_after.error is None
                and self.idle_after.text != self.idle.text)

    def as_json(self) -> dict:
        return {"probe": self.probe_id, "kind": self.kind, "concurrency": self.concurrency,
                "in_flight": round(self.in_flight, 3), "is_held": self.is_held,
                "load_failures": list(self.load_failures), "engine_busy": self.engine_busy,
                "text_changed": self.is_text_changed, "text_unstable_idle": self.is_text_unstable_idle,
                "idle": self.idle.as_json(), "loaded": self.loaded.as_json(),
                "idle_after": self.idle_after.as_json() if self.idle_after else None}


@dataclass(frozen=True)
class Criterion:
    """One gate: the probes of `kind`, judged on one attribute of their answers."""

    check: str
    kind: str
    attribute: Literal["is_correct", "is_valid"]
    what: str


CRITERIA = (
    Criterion("perf.correctness.niah", "niah", "is_correct", "the needle found"),
    Criterion("perf.correctness.toolcalls.validity", "toolcall", "is_valid", "a valid call"),
    Criterion("perf.correctness.toolcalls.values", "toolcall", "is_correct", "exactly the expected values"),
)


@dataclass(frozen=True)
class ProbeJudgement:
    probe_id: str
    status: Status
    detail: str


def _tail(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else "…" + flat[-limit:])


def judge_probe(sample: ProbeSample, criterion: Criterion, compare: str = "judged") -> ProbeJudgement:
    """How `sample` stands on `criterion` (see the module docstring for the order of the reasons)."""
    def ok(answer: ProbeAnswer) -> bool:
        return bool(getattr(answer, criterion.attribute))

    pid, idle, loaded, after = sample.probe_id, sample.idle, sample.loaded, sample.idle_after
    both = f"idle: {idle.judged} | under load (C={sample.concurrency}): {loaded.judged}"
    if failed := [(name, a.error) for name, a in (("idle", idle), ("under load", loaded), ("idle after", after))
                  if a is not None and a.error is not None]:
        return ProbeJudgement(pid, "error", "; ".join(f"{name}: not answered: {error}" for name, error in failed))
    if not sample.is_held:
        why = f"the load averaged {sample.in_flight:.2f} of {sample.concurrency} streams in flight during the ask"
        if sample.load_failures:
            why += f"; {len(sample.load_failures)} load requests failed: {sample.load_failures[0][:200]}"
        return ProbeJudgement(pid, "not_held", why)
    if after is not None and (ok(after) != ok(idle) or (compare == "text" and after.text != idle.text)):
        return ProbeJudgement(pid, "unstable", f"idle before the load: {idle.judged} | idle after: {after.judged}"
                              + (f" (text {_tail(idle.text)} vs {_tail(after.text)})" if compare == "text" else ""))
    if not ok(idle):
        return ProbeJudgement(pid, "no_reference", f"idle answer is not {criterion.what}: {idle.judged}")
    if not ok(loaded):
        return ProbeJudgement(pid, "worse", both)
    if compare == "text" and sample.is_text_changed:
        return ProbeJudgement(pid, "text_changed", f"{both}; text idle {_tail(idle.text)} vs under load "
                                                   f"{_tail(loaded.text)}")
    return ProbeJudgement(pid, "kept", both)


@dataclass(frozen=True)
class GateResult:
    """One `perf.correctness.*` gate over the probes of its kind."""

    check: str
    outcome: Literal["held", "broken", "could_not_check", "not_sampled"]
    expected: str
    observed: dict[str, str] | str
    evidence: str
    judgements: list[ProbeJudgement] = field(default_factory=list)

    @property
    def is_ok(self) -> bool:
        return self.outcome == "held"

    def could_not_check(self, label: str) -> NotJudged:
        return NotJudged(f"[{label}] {self.check}: could not check: {self.observed}")

    def as_json(self) -> dict:
        return {"check": self.check, "outcome": self.outcome, "expected": self.expected, "observed": self.observed,
                "evidence": self.evidence, "probes": [j.__dict__ for j in self.judgements]}


def judge_gate(samples: list[ProbeSample], criterion: Criterion, compare: str = "judged") -> GateResult:
    """The gate `criterion.check` over the samples of its kind."""
    mine = [s for s in samples if s.kind == criterion.kind]
    concurrency = mine[0].concurrency if mine else 0
    expected = (f"every sampled probe that gave {criterion.what} idle (twice) gives it under load at C={concurrency}"
                + (", with the very same text" if compare == "text" else ""))
    if not mine:
        return GateResult(criterion.check, "not_sampled", expected, "no probe of this kind was sampled", "")
    judged = [judge_probe(s, criterion, compare) for s in mine]
    by: dict[str, list[ProbeJudgement]] = {}
    for j in judged:
        by.setdefault(j.status, []).append(j)
    kept, bad = by.get("kept", []), by.get("worse", []) + by.get("text_changed", [])
    unjudged = by.get("not_held", []) + by.get("error", []) + by.get("unstable", [])
    changed = sum(s.is_text_changed for s in mine)
    idle_too = sum(s.is_text_changed and s.is_text_unstable_idle for s in mine)
    summary = (f"{len(kept)} kept, {len(bad)} worse, {len(by.get('no_reference', []))} no idle reference, "
               f"{len(unjudged)} not judged, of {len(mine)} probes; text changed under load in {changed} of "
               f"{len(mine)}" + (f" ({idle_too} of them changed idle again too)" if idle_too else "")
               + f" (compare = {compare})")
    evidence = summary + "; " + "; ".join(f"{j.probe_id} [{j.status}]: {j.detail}" for j in judged)
    if bad:
        return GateResult(criterion.check, "broken", expected, {j.probe_id: j.detail for j in bad}, evidence, judged)
    if unjudged:
        return GateResult(criterion.check, "could_not_check", expected,
                          {j.probe_id: f"{j.status}: {j.detail}" for j in unjudged}, evidence, judged)
    if not kept:
        return GateResult(criterion.check, "could_not_check", expected,
                          f"no probe gave {criterion.what} idle: nothing to compare ({summary})", evidence, judged)
    return GateResult(criterion.check, "held", expected, summary, evidence, judged)
