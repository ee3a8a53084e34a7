"""Speculative decoding accepts drafts at the rate the inventory expects, measured over this run's own
traffic (counter deltas around it), not the server's lifetime average."""

import pytest

pytestmark = [pytest.mark.serving]

TRAFFIC_PROMPT = "Count from 1 to 200, separated by commas."
TRAFFIC_REQUESTS = 2
TRAFFIC_TOKENS = 512


def test_acceptance_length_within_range(endpoint, engine, expect, declared):
    spec = declared(endpoint.expect.speculative, "expect.speculative")
    low = declared(spec.accept_length_min, "expect.speculative.accept_length_min")
    high = spec.accept_length_max if spec.accept_length_max is not None else float("inf")
    before = engine.acceptance_snapshot()
    for _ in range(TRAFFIC_REQUESTS):
        engine.generate(TRAFFIC_PROMPT, max_tokens=TRAFFIC_TOKENS)
    fact = engine.accept_length(before, engine.acceptance_snapshot())
    expect.measure(endpoint.name, "serving.speculative.accept_length", fact.value if fact.value is not None else "n/a")
    expect(endpoint.name, "serving.speculative.accept_length", expected=f"{low} <= length <= {high}",
           observed=fact.value, ok=fact.value is not None and low <= fact.value <= high,
           hint="the drafter is off or rejected: check --speculative-* flags, the draft model path, and whether "
                "long contexts dominate (accept length drops at 32K+, sglang#30763)",
           evidence=f"{fact.source}: {fact.quote}")
