"""The owners' multi-turn agentic workload as load: sessions whose context grows turn by turn on a shared prefix."""

import pytest

from llmval.engines import ImpossibleMetric, NotExposed, adapter_class

pytestmark = pytest.mark.perf


def test_agentic_load_turns_all_succeed(perf_gate, agentic_load, expect):
    run = agentic_load.run
    for row in run.by_context():
        expect.measure(perf_gate.label, f"agentic_ttft_p50_ms_{row['context_tokens']}_tokens", row["ttft_ms"]["median"],
                       "ms")
    if agentic_load.slo.describe() != "no SLO":
        expect.measure(perf_gate.label, "agentic_goodput_share", round(run.goodput(agentic_load.slo).share, 3), "")
    expect(perf_gate.label, "perf.agentic.failed", expected="0 failed turns",
           observed=f"{len(run.failed)} of {len(run.turns)} turns failed", ok=not run.failed,
           hint="the server refused or cut a turn: context length, tool_choice=auto without a tool parser, timeouts",
           evidence=f"{run.as_json()['errors']}; {run.describe_by_context()}; {agentic_load.report}")


@pytest.mark.needs("agentic_load.prefix_cache_hit_min")
def test_agentic_load_prefix_cache_hit_rate(perf_gate, agentic_load, inventory, expect):
    (rate, observed), minimum = agentic_load.run.prefix_cache_share(), perf_gate.agentic_load.prefix_cache_hit_min
    if (hits := agentic_load.run.cache_hits) is not None and hits.impossible:
        raise ImpossibleMetric(f"[{perf_gate.endpoint}] perf.agentic.prefix_cache_hit_rate: {observed}")
    if rate is None:
        raise NotExposed(f"[{perf_gate.endpoint}] perf.agentic.prefix_cache_hit_rate: {observed}")
    expect.measure(perf_gate.label, "agentic_prefix_cache_hit_rate", round(rate, 4), "")
    expect(perf_gate.label, "perf.agentic.prefix_cache_hit_rate", expected=f">= {minimum:.0%} of prompt tokens",
           observed=observed, ok=rate >= minimum,
           hint=f"{adapter_class(inventory.endpoint(perf_gate.endpoint)).prefix_cache_hint}, a cache too small for "
                "the sessions (evictions), or a template that changes earlier turns; each turn re-sends the previous "
                "prompt",
           evidence=f"reusable share {agentic_load.run.reusable_share:.1%}; {agentic_load.run.describe_by_context()}; "
                    f"{agentic_load.report}")


@pytest.mark.needs("agentic_load.goodput_min")
def test_agentic_load_goodput(perf_gate, agentic_load, expect):
    good, minimum = agentic_load.run.goodput(agentic_load.slo), perf_gate.agentic_load.goodput_min
    expect(perf_gate.label, "perf.agentic.goodput", expected=f">= {minimum:.0%} of turns within "
           f"{agentic_load.slo.describe()}", observed=f"{good.share:.0%} ({good.met}/{good.total})",
           ok=good.share >= minimum,
           hint="long contexts push TTFT first: prefix-cache hits, chunked prefill and the concurrency decide it",
           evidence=f"{agentic_load.run.describe_by_context()}; {agentic_load.report}")
