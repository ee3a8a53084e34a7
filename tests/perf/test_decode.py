"""Single-stream decode speed at concurrency 1: 1000 / median TPOT, as `vllm bench serve` implies it."""

import pytest

pytestmark = pytest.mark.perf


@pytest.mark.needs("decode_tok_s_c1_min")
def test_decode_tok_s_c1_meets_minimum(perf_gate, gates, run_c1, expect):
    m, minimum = run_c1.run.metrics, gates.spec.decode_tok_s_c1_min
    expect.measure(perf_gate.label, "decode_tok_s_c1", round(m.decode_tok_s, 2), "tok/s")
    expect(perf_gate.label, "perf.decode.tok_s_c1", expected=gates.bound("decode_tok_s_c1_min", "tok/s"),
           observed=f"{m.decode_tok_s:.2f} tok/s", ok=m.decode_tok_s >= minimum,
           hint="1000 / median TPOT at C=1; check speculative settings, other load, engine flags",
           evidence=f"median TPOT {m.tpot_ms.median:.2f} ms over {m.completed} requests "
                    f"({run_c1.run.workload.key()}); quoted: {perf_gate.quoted_tok_s or '-'} tok/s; "
                    f"{gates.basis}; {run_c1.host.describe()}; {run_c1.report}")


def test_no_failed_requests_at_c1(perf_gate, run_c1, expect):
    run = run_c1.run
    expect(perf_gate.label, "perf.requests.failed_c1", expected=0, observed=run.metrics.failed,
           hint="the server refused or broke streams under a single stream", evidence="; ".join(run.errors[:3]))


def test_prompt_lengths_match_workload_at_c1(perf_gate, run_c1, expect):
    lens = sorted({r.prompt_tokens for r in run_c1.run.records if r.success})
    expect(perf_gate.label, "perf.prompt.input_len", expected=[perf_gate.input_len], observed=lens,
           hint="the server's usage.prompt_tokens disagrees with /tokenize (chat template? BOS?)")
