"""The suite's metric code reproduces `vllm bench serve`'s numbers from vLLM's own per-request data (REAL)."""

from __future__ import annotations

import json

import pytest

from llmval.load import RequestRecord, compute_metrics
from selftest.strategies import ROOT

CAPTURES = sorted((ROOT / "selftest" / "data" / "perf").glob("session*/side-by-side-*.json"))
VLLM_RESULTS = [(f"{path.stem}-r{i}", run["vllm"]) for path in CAPTURES
                for i, run in enumerate(json.loads(path.read_text())["runs"])]
KEYS = ["completed", "failed", "total_input_tokens", "total_output_tokens", "output_throughput",
        "request_throughput", "median_tpot_ms", "mean_tpot_ms", "p99_tpot_ms", "p99_ttft_ms", "median_ttft_ms",
        "p90_ttft_ms", "mean_itl_ms", "p99_itl_ms", "median_e2el_ms", "p99_e2el_ms", "max_concurrent_requests",
        "max_output_tokens_per_s", "total_token_throughput", "std_ttft_ms", "mean_e2el_ms"]


def _records(result: dict) -> list[RequestRecord]:
    return [RequestRecord(success=not error, start_time=start, ttft_s=ttft, latency_s=latency, itl_s=itl,
                          output_tokens=out, prompt_tokens=inp)
            for error, start, ttft, latency, itl, out, inp in zip(
                result["errors"], result["start_times"], result["ttfts"], result["latencies"], result["itls"],
                result["output_lens"], result["input_lens"], strict=True)]


@pytest.mark.parametrize(("name", "result"), VLLM_RESULTS, ids=[n for n, _ in VLLM_RESULTS])
def test_metrics_from_vllm_requests_equal_vllm_report(name, result):
    ours = compute_metrics(_records(result), result["duration"]).as_vllm_json()
    theirs = {k: result[k] for k in KEYS if k in result}
    assert {k: pytest.approx(v, rel=1e-9) for k, v in theirs.items()} == {k: ours[k] for k in theirs}


def test_captures_are_present():
    assert len(VLLM_RESULTS) >= 8
