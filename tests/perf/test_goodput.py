"""Goodput under declared latency SLOs across a request-rate sweep (Poisson arrivals, as `--request-rate`)."""

import pytest

pytestmark = pytest.mark.perf


@pytest.mark.needs("goodput_min")
def test_goodput_meets_minimum_at_every_rate(perf_gate, gates, rate_sweep, expect):
    slo, g = rate_sweep[0].goodput, gates.spec  # the SLOs and rates in force (scaled with [perf.machine])
    for point in rate_sweep:
        expect.measure(perf_gate.label, f"goodput_share_r{point.rate:g}", round(point.goodput.share, 3), "")
    low = {f"{p.rate:g} req/s": f"{p.goodput.share:.0%} ({p.goodput.met}/{p.goodput.total})"
           for p in rate_sweep if p.goodput.share < perf_gate.goodput_min}
    slos = " and ".join(s for s in (f"TTFT {gates.bound('goodput_ttft_ms', 'ms', 4)}" if g.goodput_ttft_ms else "",
                                    f"TPOT {gates.bound('goodput_tpot_ms', 'ms', 4)}" if g.goodput_tpot_ms else "")
                        if s)
    expect(perf_gate.label, "perf.goodput.share",
           expected=f">= {perf_gate.goodput_min:.0%} of requests within {slos} at every rate",
           observed=low or f"all {len(rate_sweep)} rates met it", ok=not low,
           hint="past the knee requests queue: TTFT grows first; lower the rate the deployment is sized for, or "
                "raise capacity (batch limits, replicas)",
           evidence="; ".join(f"{p.rate:g} req/s: {p.goodput.share:.0%}, output {p.run.metrics.output_throughput:.1f} "
                              f"tok/s, TTFT p99 {p.run.metrics.ttft_ms.percentiles['p99']:.0f} ms" for p in rate_sweep)
                    + f" (requests per rate: {slo.total}); {gates.basis}")
