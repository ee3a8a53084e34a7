"""The REAL lent-H200 run (selftest/data/perf/REAL-h200-correctness-under-load-2026-12-01) re-judged with today's
rules: every gate held at C=16/64/256, every probe held, no text changed, the same six probes wrong idle at every C,
and the summary's rows agree with the per-C reports."""

from __future__ import annotations

import json

import pytest

from llmval.underload import CRITERIA, judge_gate
from selftest.strategies import ROOT

from .recorded import recorded_samples

DATA = ROOT / "selftest" / "data" / "perf" / "REAL-h200-correctness-under-load-2026-12-01"
CONCURRENCY = [16, 64, 256]
WRONG_IDLE = {"niah bench-8192-d0", "toolcall strict/flat-1", "toolcall strict/nested-0", "toolcall strict/nested-1",
              "toolcall strict/parallel-0", "toolcall strict/parallel-1"}


def _document(concurrency: int) -> dict:
    return json.loads((DATA / f"bench-correctness-c{concurrency}.json").read_text())


@pytest.mark.parametrize("concurrency", CONCURRENCY)
def test_h200_runs_rejudge_to_every_gate_held(concurrency):
    document = _document(concurrency)
    samples = recorded_samples(document)
    judged = {c.check: judge_gate(samples, c, document["compare"]) for c in CRITERIA}
    assert {k: g.outcome for k, g in judged.items()} == {g["check"]: g["outcome"] for g in document["gates"]} \
        == {c.check: "held" for c in CRITERIA}
    assert len(samples) == 25 and all(s.is_held and s.concurrency == concurrency for s in samples)
    assert min(s.in_flight for s in samples) >= 0.9 * concurrency
    assert not any(s.is_text_changed for s in samples)
    assert {s.probe_id for s in samples if not s.idle.is_correct} == WRONG_IDLE
    assert {s.probe_id for s in samples if not (s.idle_after and s.idle_after.is_correct)} == WRONG_IDLE


def test_h200_summary_rows_agree_with_the_per_c_reports():
    rows = {r["concurrency"]: r for r in json.loads((DATA / "summary.json").read_text())["rows"]}
    assert sorted(rows) == CONCURRENCY
    for concurrency in CONCURRENCY:
        document, row = _document(concurrency), rows[concurrency]
        samples = recorded_samples(document)
        assert (row["probes"], row["held"], row["text_changed"], row["judged_changed"]) == \
            (len(samples), sum(s.is_held for s in samples), sum(s.is_text_changed for s in samples),
             sum(s.idle.judged != s.loaded.judged for s in samples))
        assert row["load"] == document["load"] and row["load"]["failed"] == 0
