"""SGLang's /metrics as its source defines it: the per-priority breakdown and the lazily created tokenizer counters.

The scrapes are SYNTHESIZED (no real SGLang /metrics is recorded here): written by hand in the shape SGLang serves,
prometheus_client's multiprocess collector (`add_prometheus_middleware`): `# HELP`/`# TYPE` lines, labels in
sorted order, a `pid` label on gauges without `multiprocess_mode="mostrecent"` (num_retracted_reqs), and no sample
for a labelled counter before its first increment. The label sets follow sgl-project/sglang
python/sglang/srt/observability/metrics_collector.py at commit 016d8605: SchedulerMetricsCollector.init_new adds
`priority` under --enable-priority-scheduling and `_log_gauge_queue_count` writes the total at priority="";
TokenizerMetricsCollector.observe_one_finished_request puts `is_streaming` on prompt/generation tokens and
`cache_source` on cached tokens. The older shape follows python/sglang/srt/metrics/collector.py at commit 93d04878
(tokenizer counters labelled model_name only).
"""

from __future__ import annotations

from llmval.engines import parse_metrics
from llmval.engines.sglang import SglangAdapter
from llmval.load._sampler import build_samples, keep_lines

SCHED = 'engine_type="unified",model_name="qwen",moe_ep_rank="0",pp_rank="0",priority="{}",tp_rank="0"'
TOTAL = SCHED.format("")


def _scheduler(queue: tuple[int, int, int], running: tuple[int, int, int]) -> str:
    """Scheduler gauges with --enable-priority-scheduling: the total at priority="", each priority's part again."""
    def gauge(name: str, doc: str, values: tuple[int, int, int]) -> str:
        total, p0, p1 = values
        return (f"# HELP {name} {doc}\n# TYPE {name} gauge\n"
                f"{name}{{{TOTAL}}} {total:.1f}\n"
                f"{name}{{{SCHED.format('0')}}} {p0:.1f}\n"
                f"{name}{{{SCHED.format('1')}}} {p1:.1f}\n")
    return (gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", queue)
            + gauge("sglang:num_running_reqs", "The number of running requests.", running)
            + "# HELP sglang:token_usage The token usage.\n# TYPE sglang:token_usage gauge\n"
            + f"sglang:token_usage{{{TOTAL}}} 0.25\n"
            + "# HELP sglang:cache_hit_rate The prefix cache hit rate.\n# TYPE sglang:cache_hit_rate gauge\n"
            + f"sglang:cache_hit_rate{{{TOTAL}}} 0.5\n"
            + "# HELP sglang:num_retracted_reqs The number of retracted requests.\n"
            + "# TYPE sglang:num_retracted_reqs gauge\n"
            + 'sglang:num_retracted_reqs{engine_type="unified",model_name="qwen",moe_ep_rank="0",pid="4242",'
              'pp_rank="0",priority="",tp_rank="0"} 0.0\n')


def _tokenizer(prompt: int | None, cached: int | None) -> str:
    """Tokenizer counters (newest shape); None: no sample yet (the counter was never incremented)."""
    text = ""
    if prompt is not None:
        text += ("# HELP sglang:prompt_tokens_total Number of prefill tokens processed.\n"
                 "# TYPE sglang:prompt_tokens_total counter\n"
                 f'sglang:prompt_tokens_total{{is_streaming="true",model_name="qwen"}} {prompt:.1f}\n')
    if cached is not None:
        text += ("# HELP sglang:cached_tokens_total Number of cached prompt tokens by source (device/host/storage).\n"
                 "# TYPE sglang:cached_tokens_total counter\n"
                 f'sglang:cached_tokens_total{{cache_source="device",model_name="qwen"}} {cached:.1f}\n')
    return text


def _samples(*scrapes: str):
    names = tuple(sorted(set(SglangAdapter.sampled_metrics.gauges().values())
                         | set(SglangAdapter.sampled_metrics.counters().values())))
    kept = [(float(i), keep_lines(text, names)) for i, text in enumerate(scrapes)]
    return build_samples(SglangAdapter, 1.0, kept, [1.0] * len(kept), [])


def test_priority_breakdown_is_not_counted_twice():
    samples = _samples(_scheduler((3, 1, 2), (8, 5, 3)) + _tokenizer(400, 100),
                       _scheduler((0, 0, 0), (4, 4, 0)) + _tokenizer(900, 300))
    assert samples.gauges["waiting"] == [3.0, 0.0]  # the priority="" total, not 3 + 1 + 2
    assert samples.gauges["running"] == [8.0, 4.0]
    assert samples.gauges["retracted"] == [0.0, 0.0]  # the pid-labelled gauge is read as it is
    assert samples.cache_hits.rate == 0.4  # (300 - 100) / (900 - 400)
    assert samples.missing == []


def test_tokenizer_counters_split_by_priority_are_summed_whole():
    """The tokenizer labels each finished request with its own priority (0.5.10.post1 tokenizer_manager.py): a
    partition, not a breakdown of a total, so none of it is dropped."""
    def tokens(untagged: int, high: int, cached: int) -> str:
        return ("# TYPE sglang:prompt_tokens_total counter\n"
                f'sglang:prompt_tokens_total{{model_name="qwen",priority=""}} {untagged:.1f}\n'
                f'sglang:prompt_tokens_total{{model_name="qwen",priority="1"}} {high:.1f}\n'
                "# TYPE sglang:cached_tokens_total counter\n"
                f'sglang:cached_tokens_total{{cache_source="device",model_name="qwen",priority="1"}} {cached:.1f}\n')
    samples = _samples(_scheduler((1, 0, 1), (2, 1, 1)) + tokens(100, 100, 50),
                       _scheduler((0, 0, 0), (2, 1, 1)) + tokens(300, 500, 350))
    assert samples.counters["prefix_cache_queries"] == [0.0, 600.0]  # (300 + 500) - (100 + 100)
    assert samples.cache_hits.rate == 0.5  # (350 - 50) / 600
    assert samples.gauges["waiting"] == [1.0, 0.0]


def test_cached_tokens_absent_until_the_first_hit_reads_as_zero():
    samples = _samples(_scheduler((0, 0, 0), (1, 1, 0)) + _tokenizer(400, None),
                       _scheduler((0, 0, 0), (1, 1, 0)) + _tokenizer(900, None),
                       _scheduler((0, 0, 0), (1, 1, 0)) + _tokenizer(1500, 50))
    assert samples.counters["prefix_cache_hits"] == [0.0, 0.0, 50.0]
    assert samples.counters["prefix_cache_queries"] == [0.0, 500.0, 1100.0]
    assert abs(samples.cache_hits.rate - 50 / 1100) < 1e-12
    assert "/metrics Δsglang:cached_tokens" in samples.cache_hits.source  # the counters, not the gauge
    assert samples.missing == []  # before: sglang:cached_tokens in `missing` made perf.engine NotExposed
    no_hit = _samples(_scheduler((0, 0, 0), (1, 1, 0)) + _tokenizer(400, None),
                      _scheduler((0, 0, 0), (1, 1, 0)) + _tokenizer(900, None))
    assert no_hit.cache_hits.rate == 0.0 and no_hit.cache_hits.queried_tokens == 500


def test_tokenizer_counters_born_inside_the_window_grew_from_zero():
    """A fresh server: no request had finished at the first scrape, so SGLang had no tokenizer counter yet."""
    before = parse_metrics(_scheduler((0, 0, 0), (0, 0, 0)))
    after = parse_metrics(_scheduler((0, 0, 0), (0, 0, 0)) + _tokenizer(1000, 250))
    hits = SglangAdapter.prefix_cache_hits(before, after)
    assert (hits.rate, hits.queried_tokens, hits.hit_tokens) == (0.25, 1000, 250)
    gauge_only = SglangAdapter.prefix_cache_hits(before, before)  # no tokenizer counter on either side
    assert "latest prefill batches" in gauge_only.source


def test_verify_calls_born_inside_the_window_give_the_window_acceptance():
    gen = "# TYPE sglang:generation_tokens_total counter\n"
    verify = "# TYPE sglang:spec_verify_calls_total counter\n"
    before = parse_metrics(gen + 'sglang:generation_tokens_total{is_streaming="false",model_name="qwen"} 40.0\n')
    after = parse_metrics(gen + 'sglang:generation_tokens_total{is_streaming="false",model_name="qwen"} 340.0\n'
                          'sglang:generation_tokens_total{is_streaming="true",model_name="qwen"} 300.0\n'
                          + verify + 'sglang:spec_verify_calls_total{model_name="qwen"} 200.0\n')
    found = SglangAdapter.acceptance(before, after)
    assert found.length == 3.0  # (340 + 300 - 40) / 200, every is_streaming label set summed
    assert found.source == "/metrics Δgeneration_tokens/Δspec_verify_calls"


def test_older_tokenizer_counters_without_extra_labels_still_read():
    """collector.py at 93d04878: the tokenizer counters carry model_name only, no cache_source/is_streaming."""
    old = ("# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total{model_name=\"qwen\"} {p}\n"
           "# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total{model_name=\"qwen\"} {c}\n")
    hits = SglangAdapter.prefix_cache_hits(parse_metrics(old.replace("{p}", "100").replace("{c}", "10")),
                                           parse_metrics(old.replace("{p}", "300").replace("{c}", "110")))
    assert hits.rate == 0.5
