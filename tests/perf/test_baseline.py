"""No regression against the stored baseline of the same server identity, at C=1 and at the declared C."""

import pytest

pytestmark = pytest.mark.perf


@pytest.mark.parametrize("load", ["c1", "throughput"])
def test_no_regression_vs_baseline(perf_gate, perf_runs, benchmark, expect, load):
    c = 1 if load == "c1" else perf_gate.throughput_concurrency
    if c is None:
        pytest.skip(f"[{perf_gate.label}] the inventory declares no throughput_concurrency")
    measured = benchmark.pedantic(perf_runs.get, args=(perf_gate, c), rounds=1, iterations=1)
    benchmark.extra_info.update(server_key=measured.server_key, workload=measured.run.workload.key(),
                                **measured.run.metrics.as_vllm_json())
    check = perf_runs.against_baseline(perf_gate, measured)
    if check.baseline is None:
        pytest.skip(check.skip_reason)
    expect(perf_gate.label, f"perf.baseline.c{c}", expected=check.expected, observed=check.observed, ok=check.is_ok,
           hint=check.hint, evidence=check.evidence)
