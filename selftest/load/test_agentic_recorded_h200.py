"""The REAL agentic load on the lent H200 (selftest/data/perf/REAL-h200-agentic-load-2026-12-01) re-judged with
today's llmval.load._agentic: each run's turns rebuilt from its per-turn records, and from them the summary's
goodput under the run's SLOs, TTFT by context bucket, the reusable share and the prefix-cache reading; the
engine's hit and query counters around the whole script (/metrics before and after) agree with the runs'."""

from __future__ import annotations

import json
import tarfile

import pytest

from llmval.engines.base import CacheHits
from llmval.engines.metrics import delta, parse_metrics
from llmval.load._agentic import AgenticProfile, AgenticRun, Turn
from llmval.load._rate import Slo
from llmval.load._request import RequestRecord
from selftest.strategies import ROOT

DATA = ROOT / "selftest" / "data" / "perf" / "REAL-h200-agentic-load-2026-12-01"
SUMMARY = {r["concurrency"]: r for r in json.loads((DATA / "summary.json").read_text())["rows"]}
SLO = Slo(ttft_ms=200, tpot_ms=20)


def _members() -> dict[str, bytes]:
    with tarfile.open(DATA / "agentic.tgz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() and m.size}


MEMBERS = _members()


def _run(document: dict) -> AgenticRun:
    turns = [Turn(t["session"], t["turn"], t["prompt_chars"],
                  RequestRecord(success=not t["error"], start_time=t["start_time"], ttft_s=t["ttft_s"] or 0.0,
                                latency_s=t["latency_s"] or 0.0, output_tokens=t["output_tokens"],
                                prompt_tokens=t["prompt_tokens"], error=t["error"]))
             for t in document["turn_records"]]
    hits = CacheHits(**document["prefix_cache"])
    return AgenticRun(document["endpoint"], AgenticProfile(**document["profile"]), document["nonce"], turns,
                      document["duration_s"], cache_hits=hits)


def _document(concurrency: int) -> dict:
    return json.loads(MEMBERS[f"llmval-agentic/agentic/agentic-c{concurrency}.json"])


@pytest.mark.parametrize("concurrency", [8, 32, 64])
def test_h200_agentic_runs_recompute_from_their_turns(concurrency):
    document, row = _document(concurrency), SUMMARY[concurrency]
    run = _run(document)
    assert len(run.turns) == 1536 and not run.failed and len({t.session for t in run.turns}) == 64
    good = run.goodput(SLO)
    assert (good.met, good.total) == (document["goodput"]["met"], document["goodput"]["total"])
    assert round(good.share, 4) == row["goodput_share"] == document["goodput"]["share"]
    assert run.by_context() == document["by_context"]
    assert [(b["context_tokens"], b["turns"], b["ttft_ms"]["median"], b["ttft_ms"]["p90"]) for b in run.by_context()] \
        == [(b["context_tokens"], b["turns"], b["ttft_p50_ms"], b["ttft_p90_ms"]) for b in row["by_context"]]
    assert round(run.reusable_share, 4) == row["reusable_share"]
    rate, text = run.prefix_cache_share()
    assert rate == row["prefix_cache_hit_rate"] and text == row["prefix_cache"]
    # the engine looked up exactly the prompt tokens the run sent (its counters are the run's own traffic)
    assert run.cache_hits.queried_tokens == sum(t.record.prompt_tokens for t in run.turns)


def test_h200_goodput_falls_with_concurrency_and_the_hit_rate_does_not():
    assert [SUMMARY[c]["goodput_share"] for c in (8, 32, 64)] == [1.0, 0.4355, 0.0475]
    assert all(0.918 <= SUMMARY[c]["prefix_cache_hit_rate"] < 0.9182 for c in (8, 32, 64))
    assert all(SUMMARY[c]["engine"]["preemptions"] == 0 for c in (8, 32, 64))


def test_the_engine_counters_around_the_script_agree_with_the_three_runs():
    before = parse_metrics(MEMBERS["llmval-agentic/metrics-before.txt"].decode())
    after = parse_metrics(MEMBERS["llmval-agentic/metrics-after.txt"].decode())
    queried = delta(before, after, "vllm:prefix_cache_queries")
    hits = delta(before, after, "vllm:prefix_cache_hits")
    runs = [_document(c)["prefix_cache"] for c in (8, 32, 64)]
    in_runs_q, in_runs_h = sum(r["queried_tokens"] for r in runs), sum(r["hit_tokens"] for r in runs)
    assert in_runs_q <= queried <= in_runs_q + 1000  # the rest: the warmups, outside the measured windows
    assert in_runs_h <= hits <= in_runs_h + 1000
