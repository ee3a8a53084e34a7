"""A whole run against a SYNTHESIZED server (httpx.MockTransport): k·C requests, warmup, prompts, failures."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from llmval.engines import VllmAdapter
from llmval.load import Workload, run_load

from .fakes import FakeClock, FakeServer


def _run(server: FakeServer, workload: Workload, nonce: str = "run1"):
    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(server.handle), base_url="http://fake") as client:
            return await run_load(client, workload, endpoint="fake", engine=VllmAdapter, nonce=nonce,
                                  clock=server.clock)
    return asyncio.run(go())


WORKLOAD = Workload(model="m", input_len=32, output_len=8, concurrency=3, num_requests=12, warmup_requests=3)


def test_run_sends_warmup_then_k_times_c_requests_and_measures_only_those():
    server = FakeServer(FakeClock())
    run = _run(server, WORKLOAD)
    assert (len(server.completions), len(run.warmup), len(run.records)) == (15, 3, 12)
    assert (run.metrics.completed, run.metrics.failed, run.metrics.total_output_tokens) == (12, 0, 96)


def test_prompts_have_exact_length_and_are_unique_per_request_and_run():
    server = FakeServer(FakeClock())
    first, second = _run(server, WORKLOAD, nonce="aaaa"), _run(server, WORKLOAD, nonce="bbbb")
    prompts = [c["prompt"] for c in server.completions]
    assert len(set(prompts)) == len(prompts) == 30
    assert {r.prompt_tokens for r in [*first.records, *second.records]} == {32}
    assert len({p.split()[0] for p in prompts}) == 30  # distinct from the first token: no shared cache block


def test_payload_pins_temperature_ignores_eos_and_asks_for_usage():
    server = FakeServer(FakeClock())
    _run(server, Workload(model="m", input_len=16, output_len=4, concurrency=1, num_requests=2, warmup_requests=0,
                          temperature=0.7))
    body = server.completions[0]
    assert (body["temperature"], body["ignore_eos"], body["stream"], body["stream_options"], body["max_tokens"]) == (
        0.7, True, True, {"include_usage": True}, 4)


def test_failed_requests_are_counted_not_dropped():
    server = FakeServer(FakeClock(), fail_every=4)
    run = _run(server, WORKLOAD)
    # completions #4, #8 and #12 of 15 fail; #1-#3 are the warmup, so all three failures are measured ones
    assert (run.metrics.failed, run.metrics.completed) == (3, 9)
    assert all(e.startswith("HTTP 500") for e in run.errors)


def test_tokens_come_from_usage_when_chunks_carry_several_tokens():
    server = FakeServer(FakeClock(), tokens_per_chunk=4)
    run = _run(server, WORKLOAD)
    assert {r.output_tokens for r in run.records} == {8}
    assert {r.chunks for r in run.records} == {2}


def test_usage_above_the_engines_own_counter_is_could_not_check_never_a_measurement():
    """Issue 42.2, a second source: streams whose text and usage agree, but the engine's generation counter rose by
    half of it over the window (a proxy inflating the streams): no rate is computed from the claims."""
    from llmval.load import UnverifiedTokenCount

    with pytest.raises(UnverifiedTokenCount, match=r"usage claims 96 completion tokens, but the engine's generation "
                                                   r"counter rose by 48 over the window"):
        _run(FakeServer(FakeClock(), engine_share=0.5), WORKLOAD)
    assert _run(FakeServer(FakeClock(), engine_share=0.9), WORKLOAD).metrics.total_output_tokens == 96  # 1 a request


def test_other_traffic_in_the_window_is_reported():
    run = _run(FakeServer(FakeClock(), foreign_tokens=50), WORKLOAD)
    assert run.foreign_tokens == 50
    assert _run(FakeServer(FakeClock()), WORKLOAD).foreign_tokens == 0


def test_too_short_input_is_a_clear_error():
    from llmval.core.errors import EndpointError
    with pytest.raises(EndpointError, match="too short"):
        _run(FakeServer(FakeClock()), Workload(model="m", input_len=3, output_len=2, concurrency=1, num_requests=1,
                                                warmup_requests=0))


def test_a_long_run_says_where_it_is_while_it_runs_and_stops_saying_after_it():
    """Issue 34.7: a perf attempt of 1.5 minutes said nothing between its first and last line."""
    said: list[str] = []
    server = FakeServer(FakeClock())

    async def slow_idle_wait() -> None:
        await asyncio.sleep(0.2)

    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(server.handle), base_url="http://fake") as client:
            run = await run_load(client, WORKLOAD, endpoint="fake", engine=VllmAdapter, nonce="p", clock=server.clock,
                                 before_window=slow_idle_wait, progress=said.append, progress_every_s=0.02)
            after = len(said)
            await asyncio.sleep(0.1)
            return run, after

    run, after = asyncio.run(go())
    assert len(run.records) == 12 and len(said) == after  # nothing more once the run returned
    waits = [line for line in said if line.startswith("waiting for an idle server (")]
    assert len(waits) >= 3, said
