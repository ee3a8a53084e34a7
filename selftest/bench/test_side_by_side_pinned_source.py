"""The REAL side by side of 2026-12-01 18:12–18:32 UTC on the lent H200 (engine pinned to CPUs 0-7, clients on
8-15) and the same rounds against the calibration source: every committed row is recomputed from its rounds, the
attribution from the rows, and the README's claims are checked against the data
(selftest/data/perf/REAL-h200-side-by-side-2026-12-01-pinned-and-source/README.md)."""

from __future__ import annotations

import json

import pytest

from llmval.bench._side_by_side import Point, SideBySide, attribute

from ..strategies import ROOT

DATA = ROOT / "selftest" / "data" / "perf" / "REAL-h200-side-by-side-2026-12-01-pinned-and-source"


def _summary(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _recomputed(summary: dict) -> list[dict]:
    session = SideBySide.__new__(SideBySide)
    session.points = [Point(p["kind"], p["value"], rounds=p["rounds"]) for p in summary["points"]]
    return session.rows()


@pytest.mark.parametrize("name", ["engine-concurrency-summary.json", "engine-rates-summary.json",
                                  "source-summary.json"])
def test_every_row_is_recomputed_from_its_rounds(name):
    summary = _summary(name)
    assert _recomputed(summary) == summary["rows"]


def test_the_attribution_follows_from_the_rows():
    engine = _summary("engine-concurrency-summary.json")["rows"] + _summary("engine-rates-summary.json")["rows"]
    assert attribute(engine, _summary("source-summary.json")["rows"]) == json.loads(
        (DATA / "attribution.json").read_text())


def test_what_the_readme_says():
    engine = _summary("engine-concurrency-summary.json")["rows"] + _summary("engine-rates-summary.json")["rows"]
    entries = attribute(engine, _summary("source-summary.json")["rows"])
    assert len(engine) == 32 and sum(r["within_2pct"] for r in engine) == 0  # the goal not shown on the engine
    judged = [e for e in entries if e["off"] is not None]
    assert len(judged) == 28  # R=107 has no source row (the budget ran out)
    assert sum(e["predicted_inside_ci"] for e in judged) == 27
    [outside] = [e for e in judged if not e["predicted_inside_ci"]]
    assert (outside["point"], outside["metric"]) == ("C=256", "ttft_p99_ms")
    by = {(e["point"], e["metric"]): e for e in judged}
    for (point, metric), e in by.items():
        if metric == "tpot_p50_ms" or (metric == "output_tok_s" and point in ("C=1", "R=30/s", "R=59/s",
                                                                              "R=89/s")):
            assert e["off"] == [], e  # both tools within 2 %: the engine's own spread
        if metric == "ttft_p50_ms":
            assert "vllm" in e["off"] and e["vllm_vs_truth"] > e["suite_vs_truth"], e  # vLLM reads TTFT late
    for point in ("C=16", "C=64", "C=256"):  # closed loop: vLLM's client under-reports output throughput
        assert by[point, "output_tok_s"]["off"] == ["vllm"] and by[point, "output_tok_s"]["vllm_vs_truth"] < 0.975
    source = _summary("source-summary.json")["rows"]
    assert max(abs(r["suite_vs_truth"] - 1) for r in source if r["metric"] in ("output_tok_s", "tpot_p50_ms")) < 0.005
    ttft = {r.get("concurrency", r.get("rate")): r for r in source if r["metric"] == "ttft_p50_ms"}
    offset_ms = {k: ((r["suite_vs_truth"] - 1) * r["truth"], (r["vllm_vs_truth"] - 1) * r["truth"])
                 for k, r in ttft.items()}
    assert all(suite < 1.3 for suite, _ in offset_ms.values())  # the suite: 0.7-1.3 ms late at every point
    assert offset_ms[256][1] > 60 and offset_ms[1][1] > 2  # vLLM: 2.4 ms at C=1, 70 ms at C=256
