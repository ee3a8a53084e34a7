"""Impossible metrics are no measurement (issue 42.4): every figure the suite computes from an engine's own metrics
is checked against its physical range (`llmval.engines.ranges.RANGES`), whichever engine and whichever path computed
it, and one outside it is named (the figure, its value, its range, the values it came from), never judged.

The scrapes below are SYNTHESIZED in the metric names and label sets of the REAL scrapes (vLLM 0.24.0 and SGLang
0.5.17 on the lent H200), with the counters of a lying or restarted server.
"""

from __future__ import annotations

import pytest

from llmval.engines import (
    RANGES,
    Acceptance,
    CacheHits,
    EngineAdapter,
    ImpossibleMetric,
    SglangAdapter,
    VllmAdapter,
    accept_length_ceiling,
    parse_metrics,
)
from llmval.engines.base import COUNTER_KEYS, GAUGE_KEYS, GAUGE_RANGES
from llmval.inventory import EndpointSpec
from llmval.load._engine import EngineCounters, window_deltas
from llmval.load._sampler import build_samples


def _vllm(queries=0.0, hits=0.0, drafts=0.0, accepted=0.0, draft_tokens=0.0, generated=0.0, finished=0.0) -> str:
    return (f'vllm:prefix_cache_queries_total{{engine="0",model_name="smollm2"}} {queries}\n'
            f'vllm:prefix_cache_hits_total{{engine="0",model_name="smollm2"}} {hits}\n'
            f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="smollm2"}} {drafts}\n'
            f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="smollm2"}} {accepted}\n'
            f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="smollm2"}} {draft_tokens}\n'
            f'vllm:generation_tokens_total{{engine="0",model_name="smollm2"}} {generated}\n'
            f'vllm:request_success_total{{engine="0",finished_reason="stop",model_name="smollm2"}} {finished}\n'
            f'vllm:kv_cache_usage_perc{{engine="0",model_name="smollm2"}} 0.25\n'
            f'vllm:num_requests_running{{engine="0",model_name="smollm2"}} 1\n'
            f'vllm:num_requests_waiting{{engine="0",model_name="smollm2"}} 0\n'
            f'vllm:num_preemptions_total{{engine="0",model_name="smollm2"}} 0\n')


SGLANG_LABELS = 'engine_type="unified",model_name="smollm2",moe_ep_rank="0",pp_rank="0",tp_rank="0"'


def _sglang(prompt=0.0, cached=0.0, generated=0.0, verifies=0.0, hit_rate=None, accept_gauge=None) -> str:
    text = (f'sglang:prompt_tokens_total{{model_name="smollm2"}} {prompt}\n'
            f'sglang:cached_tokens_total{{model_name="smollm2"}} {cached}\n'
            f'sglang:generation_tokens_total{{model_name="smollm2"}} {generated}\n'
            f'sglang:spec_verify_calls_total{{model_name="smollm2"}} {verifies}\n')
    text += f"sglang:cache_hit_rate{{{SGLANG_LABELS}}} {hit_rate}\n" if hit_rate is not None else ""
    text += f"sglang:spec_accept_length{{{SGLANG_LABELS}}} {accept_gauge}\n" if accept_gauge is not None else ""
    return text


def _m(text: str):
    return parse_metrics(text)


def test_the_table_covers_every_sampled_gauge_and_names_its_reason():
    assert set(GAUGE_RANGES) == set(GAUGE_KEYS), "a gauge the adapters sample has no physical range"
    assert set(GAUGE_RANGES.values()) <= set(RANGES) and "counter_growth" in RANGES and COUNTER_KEYS
    assert all(r.why and r.what for r in RANGES.values())


# ---- the prefix-cache hit rate: 300 % ("900 of 300 tokens") ---------------------------------------------------

@pytest.mark.parametrize("engine,before,after", [
    (VllmAdapter, _vllm(queries=1000, hits=100), _vllm(queries=1300, hits=1000)),
    (SglangAdapter, _sglang(prompt=1000, cached=100), _sglang(prompt=1300, cached=1000)),
], ids=["vllm-counters", "sglang-counters"])
def test_a_hit_rate_above_one_from_counters_is_impossible_naming_its_tokens(engine, before, after):
    hits = engine.prefix_cache_hits(_m(before), _m(after))
    assert "prefix-cache hit rate 3 (900 of 300 tokens) is outside its physical range 0..1" in hits.impossible


def test_the_sglang_hit_rate_gauge_above_one_is_impossible():
    hits = SglangAdapter.prefix_cache_hits(_m("# nothing\n"), _m(f"sglang:cache_hit_rate{{{SGLANG_LABELS}}} 3.0\n"))
    assert hits.rate == 3.0 and "prefix-cache hit rate 3" in hits.impossible


def test_a_counter_that_drops_is_impossible_even_where_the_rate_looks_fine():
    hits = VllmAdapter.prefix_cache_hits(_m(_vllm(queries=1000, hits=600)), _m(_vllm(queries=500, hits=300)))
    assert "counter growth between two scrapes -500" in hits.impossible


def test_an_honest_hit_rate_is_possible():
    hits = VllmAdapter.prefix_cache_hits(_m(_vllm(queries=1000, hits=100)), _m(_vllm(queries=1300, hits=250)))
    assert hits.rate == pytest.approx(0.5) and not hits.impossible
    assert not CacheHits(None, None, None, "/metrics", missing="no counters").impossible


# ---- speculative acceptance: 9.0 with num_steps = 2 ---------------------------------------------------------

def test_an_acceptance_length_above_one_plus_the_draft_tokens_is_impossible():
    found = VllmAdapter.acceptance(_m(_vllm()), _m(_vllm(drafts=10, accepted=80, draft_tokens=20)))
    assert found.length == 9.0
    assert "speculative acceptance rate 4" in found.impossible  # 80 accepted of 20 proposed
    honest_rate = VllmAdapter.acceptance(_m(_vllm()), _m(_vllm(drafts=10, accepted=80, draft_tokens=100)))
    assert not honest_rate.impossible  # no ceiling known: 9.0 is a length
    bounded = honest_rate.within(accept_length_ceiling(num_steps=2))
    assert "speculative acceptance length 9" in bounded.impossible and "0..3" not in bounded.impossible
    assert "1..3" in bounded.impossible


def test_sglang_acceptance_from_its_counters_is_bounded_too():
    found = SglangAdapter.acceptance(_m(_sglang()), _m(_sglang(generated=900, verifies=100)))
    assert found.length == 9.0 and "1..3" in found.within(3).impossible
    assert not SglangAdapter.acceptance(_m(_sglang()), _m(_sglang(generated=244, verifies=99))).within(9).impossible


def test_a_length_below_one_is_impossible_and_the_unset_sglang_gauge_is_no_length():
    assert "speculative acceptance length 0.5" in Acceptance(0.5, None, "/metrics").impossible
    unset = SglangAdapter.acceptance(_m("# no speculative step yet\n"),
                                     _m(f"sglang:spec_accept_length{{{SGLANG_LABELS}}} 0.0\n"
                                        'sglang:generation_tokens_total{model_name="smollm2"} 40\n'))
    assert unset.length is None and not unset.impossible and "not yet set" in unset.quote


def test_the_serving_check_is_could_not_check_naming_the_length_and_the_draft_tokens():
    spec = EndpointSpec.model_validate({"name": "e", "platform": "p", "base_url": "http://127.0.0.1:1",
                                        "engine": "vllm", "model": "m", "expect": {"speculative": {
                                            "algorithm": "ngram", "num_steps": 2, "accept_length_min": 1.0}}})
    adapter = VllmAdapter(spec, client=None)  # type: ignore[arg-type]  # no request: the log is not declared
    with pytest.raises(ImpossibleMetric, match=r"\[e\] speculative acceptance length 9 .* outside its physical "
                                               r"range 1\.\.3"):
        adapter.accept_length(_m(_vllm()), _m(_vllm(drafts=10, accepted=80)))
    assert adapter.accept_length(_m(_vllm()), _m(_vllm(drafts=10, accepted=12))).value == 2.2
    assert EngineAdapter.draft_ceiling(adapter) == 3


# ---- a perf window: counters only grow; sampled gauges within their range -----------------------------------

def test_a_window_whose_counters_drop_measures_nothing():
    before = EngineCounters(VllmAdapter, _m(_vllm(generated=5000, finished=40)))
    after = EngineCounters(VllmAdapter, _m(_vllm(generated=300, finished=2)))
    deltas = window_deltas(before, after)
    assert "vllm:generation_tokens: 5000 -> 300" in deltas.counters_impossible
    assert not window_deltas(after, before).counters_impossible


def test_a_window_acceptance_out_of_range_is_no_length():
    before = EngineCounters(VllmAdapter, _m(_vllm()))
    after = EngineCounters(VllmAdapter, _m(_vllm(drafts=10, accepted=-5, draft_tokens=20)))
    deltas = window_deltas(before, after)
    assert deltas.spec_acceptance_length is None and "0.5" in deltas.spec_acceptance_impossible


def test_sampled_gauges_and_counters_outside_their_range_are_named():
    over = _vllm(queries=10).replace("vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"smollm2\"} 0.25",
                                     "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"smollm2\"} 1.5")
    samples = build_samples(VllmAdapter, 1.0, [(0.0, _vllm(queries=100)), (1.0, over)], [1.0, 1.0], [])
    assert "KV-cache usage 1.5 (vllm:kv_cache_usage_perc at 1.0 s)" in samples.impossible
    assert "counter growth between two scrapes -90 (vllm:prefix_cache_queries at 1.0 s)" in samples.impossible
    honest = build_samples(VllmAdapter, 1.0, [(0.0, _vllm(queries=100)), (1.0, _vllm(queries=300, hits=50))],
                           [1.0, 1.0], [])
    assert honest.impossible == ""
