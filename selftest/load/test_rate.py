"""Request-rate runs: seeded Poisson arrivals on absolute offsets, goodput under SLOs, the sweep plot."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmval.core.errors import InventoryError
from llmval.engines import VllmAdapter
from llmval.inventory import PerfSpec
from llmval.load import RatePoint, RequestRecord, Slo, Workload, goodput, plot_sweep, poisson_offsets, run_load

from .fakes import FakeClock, FakeServer


def _client(server: FakeServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(server.handle), base_url="http://fake")


@given(count=st.integers(1, 200), rate=st.floats(0.01, 1e4), seed=st.integers())
def test_arrivals_start_at_zero_never_go_back_and_repeat_for_a_seed(count, rate, seed):
    offsets = poisson_offsets(count, rate, seed)
    assert offsets[0] == 0.0 and len(offsets) == count
    assert all(b >= a for a, b in itertools.pairwise(offsets))
    assert offsets == poisson_offsets(count, rate, seed)


def test_arrival_gaps_average_one_over_the_rate():
    offsets = poisson_offsets(20001, 5.0, "seed")
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert statistics.fmean(gaps) == pytest.approx(0.2, rel=0.03)
    assert statistics.pstdev(gaps) == pytest.approx(0.2, rel=0.05)  # exponential: std = mean


def test_a_rate_run_sends_no_request_before_its_arrival_time():
    server = FakeServer(FakeClock())
    workload = Workload(model="m", input_len=8, output_len=4, concurrency=50, num_requests=6, warmup_requests=0,
                        request_rate=40.0)

    async def go():
        async with _client(server) as client:
            return await run_load(client, workload, endpoint="fake", engine=VllmAdapter, nonce="n1",
                                  clock=time.perf_counter)

    run = asyncio.run(go())
    offsets = poisson_offsets(6, 40.0, "n1")
    first = min(r.start_time for r in run.records)
    assert run.metrics.failed == 0
    early = [i for i, (r, o) in enumerate(zip(run.records, offsets, strict=True)) if r.start_time - first < o - 1e-3]
    assert not early
    assert "-r40" in workload.key()


def _record(ttft_s: float, tpot_s: float | None, ok: bool = True, tokens: int = 11) -> RequestRecord:
    latency = ttft_s + (tpot_s or 0) * (tokens - 1)
    return RequestRecord(success=ok, ttft_s=ttft_s, latency_s=latency, output_tokens=tokens)


def test_goodput_counts_successful_requests_within_every_slo():
    slo = Slo(ttft_ms=500, tpot_ms=50)
    assert slo.is_met(_record(0.4, 0.04))
    assert not slo.is_met(_record(0.6, 0.04))  # TTFT too slow
    assert not slo.is_met(_record(0.4, 0.06))  # TPOT too slow
    assert not slo.is_met(_record(0.1, 0.01, ok=False))  # failed requests never count
    assert Slo(ttft_ms=500).is_met(_record(0.4, 9.0))


class _Run:
    def __init__(self, records, duration):
        self.records = records
        self.metrics = type("M", (), {"duration": duration})()


def test_goodput_share_is_over_all_requests_sent_and_per_second_over_the_run():
    run = _Run([_record(0.1, 0.01), _record(0.1, 0.01), _record(2.0, 0.01), _record(0.1, 0.01, ok=False)], 2.0)
    result = goodput(run, Slo(ttft_ms=500, tpot_ms=50))
    assert (result.met, result.total, result.share, result.request_goodput) == (2, 4, 0.5, 1.0)


def test_goodput_gate_needs_a_sweep_and_an_slo():
    base = {"endpoint": "e", "request_rates": [1.0, 2.0]}
    assert PerfSpec(**base, goodput_min=0.9, goodput_ttft_ms=500).goodput_min == 0.9
    for bad in ({"goodput_min": 0.9}, {"goodput_min": 0.9, "goodput_ttft_ms": 5, "request_rates": []},
                {"request_rates": [0.0]}):
        with pytest.raises((ValueError, InventoryError)):
            PerfSpec(**{**base, **bad})


def test_sweep_plot_is_written(tmp_path):
    server = FakeServer(FakeClock())

    async def go(rate):
        workload = Workload(model="m", input_len=8, output_len=4, concurrency=8, num_requests=4, warmup_requests=0,
                            request_rate=rate)
        async with _client(server) as client:
            return await run_load(client, workload, endpoint="fake", engine=VllmAdapter, clock=time.perf_counter)

    slo = Slo(ttft_ms=1000, tpot_ms=100)
    points = [RatePoint(rate, run := asyncio.run(go(rate)), goodput(run, slo)) for rate in (50.0, 100.0)]
    path = plot_sweep(points, slo, tmp_path / "sweep.png", title="fake")
    assert path.stat().st_size > 1000
    assert points[0].as_json()["goodput_share"] == 1.0


@given(count=st.integers(1, 300), rate=st.floats(0.01, 1e4), seed=st.integers())
def test_vllm_arrivals_end_at_n_over_r_never_go_back_and_repeat(count, rate, seed):
    from llmval.load import vllm_offsets

    offsets = vllm_offsets(count, rate, seed)
    assert len(offsets) == count and offsets[0] > 0
    assert offsets[-1] == pytest.approx(count / rate, rel=1e-9)  # vLLM rescales: the offered rate is exact
    assert all(b >= a for a, b in itertools.pairwise(offsets))
    assert offsets == vllm_offsets(count, rate, seed)


def test_vllm_arrivals_are_exponential_before_the_rescale():
    from llmval.load import vllm_offsets

    offsets = vllm_offsets(20000, 5.0, "seed")
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert statistics.fmean(gaps) == pytest.approx(0.2, rel=0.02)
    assert statistics.pstdev(gaps) == pytest.approx(0.2, rel=0.05)
