"""httpcore on plain asyncio streams: same results as httpx's default pool, connections reused, timeouts mapped."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from llmval.bench import CalibrationSource, Schedule
from llmval.load import completion_payload, stream_completion
from llmval.load._netbackend import asyncio_transport

PAYLOAD = completion_payload(model="m", prompt="a b", output_len=9, temperature=0.0, ignore_eos=True)


async def _against_source(schedule: Schedule, body):
    source = CalibrationSource(schedule)
    port = await source.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=httpx.Timeout(10, read=0.5),
                                     transport=asyncio_transport(max_connections=4)) as client:
            return await body(client)
    finally:
        await source.close()


def test_streams_complete_and_connections_are_kept_alive():
    async def body(client):
        records = []
        for _ in range(3):  # three waves of three: the pool keeps three connections
            records += await asyncio.gather(*(stream_completion(client, PAYLOAD) for _ in range(3)))
        return records, len(client._transport._pool.connections)

    records, connections = asyncio.run(_against_source(Schedule(ttft_s=0.0, interval_s=0.001, tokens_per_chunk=2),
                                                       body))
    assert [(r.success, r.chunks, r.output_tokens) for r in records] == [(True, 5, 9)] * 9, records[0].error
    assert connections == 3


def test_a_silent_server_is_a_read_timeout():
    async def body(client):
        with pytest.raises(httpx.ReadTimeout):
            await client.post("/v1/completions", json={"max_tokens": 2})  # not streamed: answers after 5 s

    asyncio.run(_against_source(Schedule(ttft_s=5.0, interval_s=0.001), body))
