"""Time to first token (p99, numpy-linear as vLLM's `p99_ttft_ms`) and speculative acceptance over the run."""

import pytest

from llmval.engines import ImpossibleMetric, NotExposed, accept_length_ceiling, out_of_range

pytestmark = pytest.mark.perf


@pytest.mark.needs("ttft_p99_ms_max")
def test_ttft_p99_within_maximum(perf_gate, gates, run_ttft, expect):
    m, c = run_ttft.run.metrics, perf_gate.ttft_concurrency
    p99 = m.ttft_ms.percentiles["p99"]
    expect.measure(perf_gate.label, f"ttft_p99_ms_c{c}", round(p99, 1), "ms")
    expect(perf_gate.label, "perf.ttft.p99_ms", expected=f"{gates.bound('ttft_p99_ms_max', 'ms', 4)} at C={c}",
           observed=f"{p99:.1f} ms at C={c}", ok=p99 <= gates.spec.ttft_p99_ms_max,
           hint="prefill of input_len tokens plus queueing; chunked prefill, other load, CPU/GPU clocks",
           evidence=f"TTFT median {m.ttft_ms.median:.1f} ms over {m.completed} requests "
                    f"({run_ttft.run.workload.key()}); {gates.basis}; {run_ttft.host.describe()}; {run_ttft.report}")


def test_speculative_acceptance_within_declared_range(perf_gate, perf_runs, run_c1, expect):
    spec = perf_runs.inventory.endpoint(perf_gate.endpoint).expect.speculative
    if spec is None or (spec.accept_length_min is None and spec.accept_length_max is None):
        pytest.skip(f"endpoint {perf_gate.endpoint} declares no speculative accept_length range")
    window = run_c1.run.engine
    length = window.spec_acceptance_length
    ceiling = accept_length_ceiling(num_steps=spec.num_steps, num_draft_tokens=spec.num_draft_tokens)
    if impossible := window.spec_acceptance_impossible or out_of_range("spec_accept_length", length, high=ceiling,
                                                                        values=window.spec_acceptance_note):
        raise ImpossibleMetric(f"[{perf_gate.endpoint}] perf.speculative.acceptance_length: {impossible}")
    if length is None:
        raise NotExposed(f"[{perf_gate.endpoint}] perf.speculative.acceptance_length: acceptance over this run's "
                         f"window cannot be measured: {window.spec_acceptance_note}")
    expect.measure(perf_gate.label, "spec_acceptance_length_c1", round(length, 3), "tokens/step")
    low, high = spec.accept_length_min or 0, spec.accept_length_max or float("inf")
    expect(perf_gate.label, "perf.speculative.acceptance_length", expected=f"in [{low:g}, {high:g}]",
           observed=f"{length:.3f}", ok=low <= length <= high,
           hint="the engine's acceptance over this run's window; temperature and prompts change it",
           evidence=f"{window.spec_acceptance_note}; acceptance rate {window.spec_acceptance_rate}")
