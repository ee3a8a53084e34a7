"""The metric math: percentiles are numpy's, and run metrics follow `vllm bench serve`'s calculate_metrics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from llmval.load import RequestRecord, compute_metrics, max_concurrency, percentile

from .strategies import percentiles, sample_lists


@given(values=sample_lists, p=percentiles)
@example(values=[0.1, 0.2, 0.3], p=99.0)
@example(values=[5.0], p=50.0)
@example(values=[1.0, 2.0], p=100.0)
def test_percentile_equals_numpy_linear(values, p):
    assert percentile(values, p) == np.percentile(values, p)


@st.composite
def request_records(draw) -> RequestRecord:
    ok = draw(st.booleans())
    if not ok:
        return RequestRecord(success=False, error="HTTP 500: boom")
    tokens = draw(st.integers(min_value=1, max_value=512))
    ttft = draw(st.floats(min_value=0.001, max_value=5))
    decode = draw(st.floats(min_value=0.0, max_value=30))
    start = draw(st.floats(min_value=0, max_value=100))
    return RequestRecord(success=True, start_time=start, ttft_s=ttft, latency_s=ttft + decode,
                         itl_s=[decode / max(tokens - 1, 1)] * max(tokens - 1, 0),
                         output_tokens=tokens, prompt_tokens=draw(st.integers(min_value=1, max_value=8192)))


@given(records=st.lists(request_records(), min_size=1, max_size=40), duration=st.floats(min_value=0.01, max_value=1e4))
def test_run_metrics_match_vllm_calculate_metrics(records, duration):
    m = compute_metrics(records, duration)
    ok = [r for r in records if r.success]
    tpots = [(r.latency_s - r.ttft_s) / (r.output_tokens - 1) for r in ok if r.output_tokens > 1]
    out = sum(r.output_tokens for r in ok)
    assert (m.completed, m.failed, m.total_output_tokens) == (len(ok), len(records) - len(ok), out)
    assert m.output_throughput == pytest.approx(out / duration)
    assert m.tpot_ms.median == pytest.approx(np.median(tpots or 0) * 1000)
    assert m.ttft_ms.percentiles["p99"] == pytest.approx(np.percentile([r.ttft_s for r in ok] or 0, 99) * 1000)
    assert m.decode_tok_s == (pytest.approx(1000 / m.tpot_ms.median) if m.tpot_ms.median > 0 else 0.0)


def test_failed_requests_are_counted_and_excluded_from_tokens():
    good = RequestRecord(success=True, ttft_s=0.1, latency_s=1.1, output_tokens=11, prompt_tokens=5)
    bad = RequestRecord(success=False, error="ReadError: reset")
    m = compute_metrics([good, bad, bad], duration_s=2.0)
    assert (m.completed, m.failed, m.total_output_tokens, m.output_throughput) == (1, 2, 11, 5.5)
    assert m.decode_tok_s == pytest.approx(10.0)  # TPOT = (1.1 - 0.1) / 10 = 100 ms


def test_decode_tok_s_is_reciprocal_of_median_tpot_not_median_of_reciprocals():
    records = [RequestRecord(success=True, ttft_s=0.0, latency_s=t * 9, output_tokens=10) for t in (0.01, 0.02)]
    m = compute_metrics(records, duration_s=1.0)
    assert m.decode_tok_s == pytest.approx(1000 / 15)  # not (100 + 50) / 2 = 75


def test_max_concurrency_sweeps_overlaps():
    def at(start, latency):
        return RequestRecord(success=True, start_time=start, latency_s=latency)
    assert max_concurrency([at(0, 2), at(1, 2), at(2.5, 1), at(10, 1)]) == 2
