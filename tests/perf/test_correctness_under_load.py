"""Correctness under load: sampled NIAH cells and tool calls, asked at temperature 0 while the load generator holds
the engine at its measured concurrency, judge no worse than the same requests asked idle (before and after).

What "unchanged" means (the judged answer, or with `compare = "text"` also the text) is decided and documented in
`llmval.underload.compare`; a probe asked while the load was not held, or whose idle answers disagree, cannot be
judged, and its gate says could not check rather than pass."""

import pytest

pytestmark = [pytest.mark.perf, pytest.mark.needs("correctness")]


def judge(expect, label, run, check, hint):
    gate = run.gate(check)
    if gate.outcome == "not_sampled":
        pytest.skip(f"[{label}] [perf.correctness] samples no probe for {check}")
    if gate.outcome == "could_not_check":
        raise gate.could_not_check(label)
    expect(label, check, expected=gate.expected, observed=gate.observed, ok=gate.is_ok, hint=hint,
           evidence=f"{gate.evidence}; {run.report}")


def test_niah_needles_still_found_under_load(perf_gate, correctness_under_load, expect):
    judge(expect, perf_gate.label, correctness_under_load, "perf.correctness.niah",
          "a needle found idle was lost while the engine was busy: KV-cache pressure or preemption (recompute, "
          "swap), a batched-attention or chunked-prefill bug; compare the two answers in the report")


def test_tool_call_validity_not_lower_under_load(perf_gate, correctness_under_load, expect):
    judge(expect, perf_gate.label, correctness_under_load, "perf.correctness.toolcalls.validity",
          "a call valid idle came back invalid under load: structured-output (guided decoding) backend under "
          "batching, the tool parser on interleaved streams, truncation from a lower max_tokens budget")


def test_tool_call_values_unchanged_under_load(perf_gate, correctness_under_load, expect):
    judge(expect, perf_gate.label, correctness_under_load, "perf.correctness.toolcalls.values",
          "exact argument values changed under load: answers mixed between requests, or numerics under batching "
          "(a 135M model at temperature 0 is not batch-invariant: see the report's text-changed count)")
