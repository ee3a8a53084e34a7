"""The calibration source: its schedule is exact by construction, and the wire follows it.

Wall-clock checks hold on a loaded 2-core box: a chunk may come late (the machine is shared) but
never early, and every count (chunks, tokens, usage) is exact.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmval.bench import CalibrationSource, Schedule
from llmval.load import completion_payload, stream_completion

schedules = st.builds(Schedule, ttft_s=st.floats(0, 2), interval_s=st.floats(1e-4, 0.5),
                      tokens_per_chunk=st.integers(1, 8), output_len=st.integers(1, 512))


@given(schedule=schedules, output_len=st.integers(1, 2048))
def test_chunks_carry_exactly_the_output_tokens_one_prefill_token_first(schedule, output_len):
    tokens = schedule.chunk_tokens(output_len)
    assert sum(tokens) == output_len
    assert tokens[0] == 1
    assert all(1 <= t <= schedule.tokens_per_chunk for t in tokens[1:])


@given(schedule=schedules, output_len=st.integers(1, 2048))
def test_due_times_are_exact_multiples_of_the_interval_not_summed_gaps(schedule, output_len):
    offsets = schedule.chunk_offsets_s(output_len)
    assert offsets == [schedule.ttft_s + k * schedule.interval_s for k in range(len(offsets))]


@given(m=st.integers(1, 8), chunks=st.integers(2, 200), interval=st.floats(1e-3, 0.5), ttft=st.floats(0, 2),
       concurrency=st.integers(1, 64), waves=st.integers(1, 8))
def test_truth_is_tokens_per_chunk_over_interval_when_chunks_are_full(m, chunks, interval, ttft, concurrency, waves):
    schedule = Schedule(ttft_s=ttft, interval_s=interval, tokens_per_chunk=m)
    output_len = 1 + m * (chunks - 1)
    truth = schedule.truth(output_len=output_len, concurrency=concurrency, num_requests=concurrency * waves)
    assert truth.decode_tok_s == pytest.approx(m / interval)
    assert truth.e2el_ms == pytest.approx((ttft + (chunks - 1) * interval) * 1000)
    assert truth.output_throughput == pytest.approx(concurrency * output_len / (truth.e2el_ms / 1000))


def test_bad_schedules_are_refused():
    for bad in ({"interval_s": 0}, {"ttft_s": -1}, {"tokens_per_chunk": 0}):
        with pytest.raises(ValueError):
            Schedule(**bad)


async def _with_source(schedule: Schedule, body):
    source = CalibrationSource(schedule)
    port = await source.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            return await body(client), source
    finally:
        await source.close()


def test_stream_follows_the_schedule_never_early_with_usage_in_the_final_chunk():
    schedule = Schedule(ttft_s=0.05, interval_s=0.01, tokens_per_chunk=3, output_len=13)
    payload = completion_payload(model="m", prompt="a b c d", output_len=13, temperature=0.0, ignore_eos=True)

    async def body(client):
        return await stream_completion(client, payload)

    record, source = asyncio.run(_with_source(schedule, body))
    assert record.success, record.error
    assert (record.chunks, record.output_tokens, record.prompt_tokens) == (5, 13, 4)  # chunks 1+3+3+3+3
    assert record.ttft_s >= schedule.ttft_s
    due = schedule.chunk_offsets_s(13)
    arrivals = [record.ttft_s + sum(record.itl_s[:k]) for k in range(len(record.itl_s) + 1)]
    assert all(at >= d - 1e-3 for at, d in zip(arrivals, due, strict=True))  # 1 ms: the loop's clock granularity
    assert len(record.itl_s) == 4  # per chunk, not per token (a late first chunk shortens the next gap: no bound)
    assert source.lateness.events == 5


def test_chat_non_streaming_models_and_schedule_endpoints():
    schedule = Schedule(ttft_s=0.0, interval_s=0.001, output_len=4)

    async def body(client):
        chat = await client.post("/v1/chat/completions", json={"model": "x", "messages": [
            {"role": "user", "content": "hi there"}], "stream": True, "max_tokens": 3})
        whole = await client.post("/v1/completions", json={"model": "x", "prompt": "p"})
        put = await client.put("/calibration", content=json.dumps({"interval_s": 0.5}))
        bad = await client.post("/v1/completions", content=b"not json")
        return chat, whole, put, (await client.get("/calibration")).json(), bad, await client.get("/nope")

    (chat, whole, put, state, bad, missing), _ = asyncio.run(_with_source(schedule, body))
    events = [json.loads(line[6:]) for line in chat.text.split("\n\n") if line.startswith("data: {")]
    assert [e["choices"][0]["delta"].get("role") for e in events if e["choices"]] == ["assistant", None, None]
    assert events[-1]["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}
    assert chat.text.rstrip().endswith("data: [DONE]")
    assert whole.json()["usage"]["completion_tokens"] == 4
    assert put.status_code == 200 and state["schedule"]["interval_s"] == 0.5
    assert bad.status_code == 400 and missing.status_code == 404


@pytest.mark.subprocess
def test_source_in_its_own_process_serves_until_stopped():
    from llmval.bench import source_process

    started = time.monotonic()
    with source_process(Schedule(ttft_s=0, interval_s=0.001, output_len=2)) as url:
        assert httpx.get(url + "/health", timeout=10).json() == {"status": "ok"}
    assert time.monotonic() - started < 30
