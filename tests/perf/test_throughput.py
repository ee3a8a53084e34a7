"""Aggregate output throughput at the declared concurrency C over k·C requests (ramp and tail included)."""

import pytest

pytestmark = pytest.mark.perf


@pytest.mark.needs("output_tok_s_min")
def test_output_throughput_meets_minimum(perf_gate, gates, run_throughput, expect):
    m, c = run_throughput.run.metrics, perf_gate.throughput_concurrency
    expect.measure(perf_gate.label, f"output_tok_s_c{c}", round(m.output_throughput, 2), "tok/s")
    expect(perf_gate.label, "perf.throughput.output_tok_s",
           expected=f"{gates.bound('output_tok_s_min', 'tok/s')} at C={c}",
           observed=f"{m.output_throughput:.2f} tok/s at C={c}",
           ok=m.output_throughput >= gates.spec.output_tok_s_min,
           hint="Σ output tokens / run duration over k·C requests; check batching limits (max_num_seqs), other load",
           evidence=f"{m.total_output_tokens} tokens in {m.duration:.2f} s, peak {m.peak_in_flight} in flight "
                    f"({run_throughput.run.workload.key()}); {gates.basis}; {run_throughput.host.describe()}; "
                    f"{run_throughput.report}")


@pytest.mark.needs("throughput_concurrency")
def test_no_failed_requests_at_throughput_concurrency(perf_gate, run_throughput, expect):
    run = run_throughput.run
    expect(perf_gate.label, "perf.requests.failed", expected=0, observed=run.metrics.failed,
           hint=f"requests failed at C={perf_gate.throughput_concurrency}: timeouts, 5xx, KV cache exhausted?",
           evidence="; ".join(run.errors[:3]))
