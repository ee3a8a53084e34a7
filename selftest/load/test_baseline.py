"""Baselines are stored per server identity and compared only with runs of the same identity."""

from __future__ import annotations

import dataclasses

from llmval.load import BaselineStore, LoadRun, RequestRecord, Workload, compare_to_baseline, compute_metrics
from llmval.load._plot import plot_run

IDENTITY = {"endpoint": "e", "engine": "vllm", "version": "0.32.0", "models": [{"id": "m", "root": "/m"}]}
WORKLOAD = Workload(model="m", input_len=16, output_len=11, concurrency=1, num_requests=2, warmup_requests=0)


def _run(tpot_s: float) -> LoadRun:
    records = [RequestRecord(success=True, start_time=i, ttft_s=0.1, latency_s=0.1 + 10 * tpot_s, output_tokens=11,
                             prompt_tokens=16, itl_s=[tpot_s] * 10) for i in range(2)]
    return LoadRun(endpoint="e", workload=WORKLOAD, nonce="n", records=records, warmup=[],
                   metrics=compute_metrics(records, duration_s=2 * (0.1 + 10 * tpot_s)))


def test_baseline_round_trips_and_regression_is_judged_against_tolerance(tmp_path):
    store = BaselineStore(tmp_path)
    store.save(_run(0.010), IDENTITY)  # 100 tok/s
    baseline = store.load("e", IDENTITY, WORKLOAD.key())
    assert baseline is not None and baseline.metrics["decode_tok_s"] == 100.0
    slower = {r.metric: r.is_ok for r in compare_to_baseline(_run(0.0125), baseline, tolerance=0.10)}  # 80 tok/s
    within = {r.metric: r.is_ok for r in compare_to_baseline(_run(0.0105), baseline, tolerance=0.10)}  # 95 tok/s
    assert slower == {"decode_tok_s": False, "output_throughput": False}
    assert within == {"decode_tok_s": True, "output_throughput": True}


def test_baseline_of_another_deployment_is_never_loaded_but_listed(tmp_path):
    store = BaselineStore(tmp_path)
    store.save(_run(0.010), IDENTITY)
    upgraded = {**IDENTITY, "version": "0.33.0"}
    assert store.load("e", upgraded, WORKLOAD.key()) is None
    assert [b.identity["version"] for b in store.others("e", upgraded, WORKLOAD.key())] == ["0.32.0"]


def test_other_workload_has_no_baseline(tmp_path):
    store = BaselineStore(tmp_path)
    store.save(_run(0.010), IDENTITY)
    assert store.load("e", IDENTITY, dataclasses.replace(WORKLOAD, output_len=12).key()) is None


def test_plot_is_written_with_and_without_baseline(tmp_path):
    store = BaselineStore(tmp_path)
    store.save(_run(0.010), IDENTITY)
    with_baseline = plot_run(_run(0.011), store.load("e", IDENTITY, WORKLOAD.key()), tmp_path / "a.png", title="t")
    alone = plot_run(_run(0.011), None, tmp_path / "b.png", title="t")
    assert with_baseline.read_bytes()[:8] == alone.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
