"""The REAL local-engine runs (selftest/data/perf/REAL-local-correctness-2026-12-01) re-judged with today's rules:
each gate's outcome as recorded, and the one text that changed under load changed idle again too (not the load's)."""

from __future__ import annotations

import json

import pytest

from llmval.underload import CRITERIA, judge_gate
from selftest.strategies import ROOT

from .recorded import recorded_samples

DATA = ROOT / "selftest" / "data" / "perf" / "REAL-local-correctness-2026-12-01"
RUNS = ["nightly-local-vllm-correctness-c4.json", "bench-correctness-c4.json", "bench-correctness-c8.json"]


@pytest.mark.parametrize("name", RUNS)
def test_recorded_runs_rejudge_to_their_recorded_outcomes(name):
    document = json.loads((DATA / name).read_text())
    samples = recorded_samples(document)
    assert {c.check: judge_gate(samples, c, document["compare"]).outcome for c in CRITERIA} == \
        {g["check"]: g["outcome"] for g in document["gates"]} == {c.check: "held" for c in CRITERIA}
    assert all(s.is_held for s in samples)


def test_the_one_text_changed_under_load_changed_idle_again_too():
    samples = recorded_samples(json.loads((DATA / "bench-correctness-c4.json").read_text()))
    changed = [s for s in samples if s.is_text_changed]
    assert [s.probe_id for s in changed] == ["niah bench-2048-d25"] and changed[0].is_text_unstable_idle
    assert changed[0].idle.is_correct and changed[0].loaded.is_correct
    assert judge_gate(samples, CRITERIA[0], "text").judgements[6].status == "unstable"  # not "text_changed"
