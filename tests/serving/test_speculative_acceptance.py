"""Speculative decoding accepts drafts at the rate the inventory expects, measured over this run's own
traffic (counter deltas around it), not the server's lifetime average; and a real stream shows what that means
for latency: several tokens per streamed chunk, so decode speed is 1000 / TPOT, never 1000 / per-chunk ITL."""

import asyncio

import pytest

from llmval.io.http import make_async_client
from llmval.load import completion_payload, stream_completion
from llmval.load.speculative import stream_chunking

pytestmark = [pytest.mark.serving, pytest.mark.smoke]

TRAFFIC_PROMPT = "Count from 1 to 200, separated by commas."
TRAFFIC_REQUESTS = 2
TRAFFIC_TOKENS = 512
# A prompt whose continuation repeats what it already holds: n-gram and model drafters both accept here.
REPEAT_PROMPT = "Repeat after me, ten times: the cat sat on the mat. " + "The cat sat on the mat. " * 6
REPEAT_TOKENS = 96


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


def test_streamed_chunks_carry_speculated_tokens(endpoint, settings, expect, declared):
    """One real streamed completion: more than one token per chunk (drafts accepted) and no more than one
    step allows (1 + num_speculative_tokens); its TPOT, not its per-chunk ITL, is the decode speed."""
    spec = declared(endpoint.expect.speculative, "expect.speculative")
    steps = declared(spec.num_steps, "expect.speculative.num_steps")
    payload = completion_payload(model=endpoint.model, prompt=REPEAT_PROMPT, output_len=REPEAT_TOKENS,
                                 temperature=0.0, ignore_eos=True)

    async def stream():
        async with make_async_client(str(endpoint.base_url).rstrip("/"), api_key_env=endpoint.api_key_env,
                                     timeout_s=endpoint.request_timeout_s, recorder=settings.recorder,
                                     replay=settings.replay) as client:
            return await stream_completion(client, payload)

    shape = stream_chunking(asyncio.run(stream()), num_speculative_tokens=steps, what=f"[{endpoint.name}]")
    expect.measure(endpoint.name, "serving.speculative.tokens_per_chunk", round(shape.tokens_per_chunk, 2))
    expect.measure(endpoint.name, "serving.speculative.decode_tok_s", round(shape.decode_tok_s, 1), "tok/s")
    expect.measure(endpoint.name, "serving.speculative.decode_tok_s_by_itl", round(shape.decode_tok_s_by_itl, 1),
                   "tok/s")
    expect(endpoint.name, "serving.speculative.tokens_per_chunk",
           expected=f"1 < tokens/chunk <= {shape.max_tokens_per_step} (1 + num_speculative_tokens {steps})",
           observed=round(shape.tokens_per_chunk, 2), ok=shape.holds,
           hint="<= 1: no draft accepted (speculation off?); above 1 + steps: the engine speculates more tokens "
                "than the inventory declares (--speculative-config num_speculative_tokens / --speculative-num-steps)",
           evidence=shape.describe(timed=settings.replay is None))
