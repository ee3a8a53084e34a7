"""The h11 transport of the load generator: streams complete, connections are reused, timeouts and stale connections."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from llmval.bench import CalibrationSource, Schedule
from llmval.io.h11transport import H11Transport
from llmval.load import completion_payload, stream_completion

PAYLOAD = completion_payload(model="m", prompt="a b", output_len=9, temperature=0.0, ignore_eos=True)


async def _against_source(schedule: Schedule, body):
    source = CalibrationSource(schedule)
    port = await source.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=httpx.Timeout(10, read=0.5),
                                     transport=H11Transport()) as client:
            return await body(client)
    finally:
        await source.close()


def test_streams_complete_and_connections_are_kept_alive():
    async def body(client):
        records = []
        for _ in range(3):  # three waves of three: the pool keeps three connections
            records += await asyncio.gather(*(stream_completion(client, PAYLOAD) for _ in range(3)))
        return records, sum(len(c) for c in client._transport._idle.values())

    records, connections = asyncio.run(_against_source(Schedule(ttft_s=0.0, interval_s=0.001, tokens_per_chunk=2),
                                                       body))
    assert [(r.success, r.chunks, r.output_tokens) for r in records] == [(True, 5, 9)] * 9, records[0].error
    assert connections == 3


def test_a_silent_server_is_a_read_timeout():
    async def body(client):
        with pytest.raises(httpx.ReadTimeout):
            await client.post("/v1/completions", json={"max_tokens": 2})  # not streamed: answers after 5 s

    asyncio.run(_against_source(Schedule(ttft_s=5.0, interval_s=0.001), body))


def test_a_keep_alive_connection_closed_by_the_server_is_replaced():
    async def body(client):
        first = await stream_completion(client, PAYLOAD)
        for conn in client._transport._idle[("http", "127.0.0.1", client.base_url.port)]:
            conn.writer.transport.abort()  # as if the server had closed it while idle
        await asyncio.sleep(0.01)
        return first, await stream_completion(client, PAYLOAD)

    first, second = asyncio.run(_against_source(Schedule(ttft_s=0.0, interval_s=0.001), body))
    assert first.success and second.success, second.error
