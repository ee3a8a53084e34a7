"""The engine's own /metrics, sampled through every perf run: queue, KV-cache usage, preemptions, prefix cache."""

import pytest

from llmval.engines import ImpossibleMetric, NotExposed

pytestmark = pytest.mark.perf


def _sampled(perf_gate, gate_runs) -> dict:
    """C -> the run's engine samples; NotExposed naming what is missing when a run could not be sampled."""
    by_c = {m.run.workload.concurrency: m.run.engine_samples for m in gate_runs}
    if any(s is None for s in by_c.values()):
        pytest.skip(f"[{perf_gate.endpoint}] the engine's adapter names no /metrics to sample")
    short = {f"C={c}": f"{s.count} samples, missing {s.missing}" for c, s in by_c.items() if s.count < 2 or s.missing}
    if short:
        raise NotExposed(f"[{perf_gate.endpoint}] perf.engine: /metrics could not be sampled through every run: "
                         f"{short}")
    impossible = {f"C={c}": why for c, s in by_c.items() if (why := s.impossible)}
    if impossible:
        raise ImpossibleMetric(f"[{perf_gate.endpoint}] perf.engine: sampled /metrics outside their physical range: "
                               f"{impossible}")
    return by_c


def test_engine_metrics_sampled_through_every_run(perf_gate, gate_runs, expect):
    by_c = _sampled(perf_gate, gate_runs)
    for c, samples in by_c.items():
        for key, value in samples.summary().items():
            if value is not None and key != "samples":
                expect.measure(perf_gate.label, f"engine_{key}_c{c}", value, "")
    failed = {f"C={c}": s.failures[:3] for c, s in by_c.items() if s.failures}
    expect(perf_gate.label, "perf.engine.sampled",
           expected=f"every metric the adapter names, every {perf_gate.metrics_interval_s:g} s through each run, "
                    "no scrape failing", observed=failed or {f"C={c}": f"{s.count} samples" for c, s in by_c.items()},
           ok=not failed,
           hint="a failed GET /metrics under load: the API server did not answer its own metrics (overloaded, or a "
                "proxy in front); the samples are in reports/perf/<label>-c<C>.json `engine_samples` and the plot",
           evidence="; ".join(f"C={c}: {s.summary()}" for c, s in by_c.items()))


@pytest.mark.needs("preemptions_max")
def test_engine_preempts_no_more_than_declared(perf_gate, gate_runs, expect):
    summaries = {f"C={c}": s.summary() for c, s in _sampled(perf_gate, gate_runs).items()}
    observed = {c: s.get("preemptions") for c, s in summaries.items()}
    if None in observed.values():
        raise NotExposed(f"[{perf_gate.endpoint}] perf.engine.preemptions: the engine counts no preemptions "
                         "in /metrics")
    expect(perf_gate.label, "perf.engine.preemptions", expected=f"<= {perf_gate.preemptions_max} in every run",
           observed=observed, ok=all(v <= perf_gate.preemptions_max for v in observed.values()),
           hint="a preempted request's KV cache is freed and recomputed: the KV cache does not hold the concurrency "
                "(more KV memory: gpu-memory-utilization, VLLM_CPU_KVCACHE_SPACE; or a lower max-num-seqs)",
           evidence="; ".join(f"{c}: waiting max {s['waiting_max']}, KV usage max {s.get('kv_cache_usage_max')}"
                              for c, s in summaries.items()))
