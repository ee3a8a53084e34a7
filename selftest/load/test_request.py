"""One streamed request, timed vLLM's way: TTFT, per-chunk ITL, E2E, TPOT and tokens from usage."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from llmval.load import completion_payload, stream_completion

from .fakes import FakeClock, TimedStream
from .strategies import completion_streams, wire_length, wire_pieces

SSE = {"content-type": "text/event-stream"}
PAYLOAD = completion_payload(model="m", prompt="p", output_len=120, temperature=0.0, ignore_eos=True)
"""max_tokens 120: the most a stream of `completion_streams` claims (30 chunks of up to 4 tokens)."""


def _measure(pieces, *, status: int = 200, fail_after: int | None = None, body: bytes = b""):
    clock = FakeClock(0.0)

    def handle(request: httpx.Request) -> httpx.Response:
        if status != 200:
            return httpx.Response(status, content=body)
        shifted = list(pieces)
        return httpx.Response(200, headers=SSE, stream=TimedStream(shifted, clock, fail_after=fail_after))

    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://fake") as client:
            return await stream_completion(client, PAYLOAD, clock=clock)

    return asyncio.run(go())


@given(stream=completion_streams(), data=st.data())
def test_chunking_does_not_change_ttft_tpot_or_token_counts(stream, data):
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=wire_length(stream.events) - 1), max_size=40))
    note(f"cuts={sorted(cuts)}")
    whole = _measure(wire_pieces(stream.events, []))
    split = _measure(wire_pieces(stream.events, cuts))
    assert whole.success and split.success, (whole.error, split.error)
    assert (split.ttft_s, split.latency_s, split.tpot_s, split.output_tokens, split.prompt_tokens, split.itl_s) == (
        whole.ttft_s, whole.latency_s, whole.tpot_s, whole.output_tokens, whole.prompt_tokens, whole.itl_s)


@given(stream=completion_streams(min_chunks=2))
def test_timings_follow_vllm_definitions(stream):
    record = _measure(wire_pieces(stream.events, []))
    first, last = stream.chunk_times[0], stream.chunk_times[-1]
    assert record.ttft_s == pytest.approx(first)
    assert record.latency_s == pytest.approx(last)  # the last chunk with choices, not the usage message
    assert record.output_tokens == stream.completion_tokens  # from usage, not the number of chunks
    assert len(record.itl_s) == len(stream.chunk_times) - 1  # one ITL per chunk gap
    assert record.tpot_s == pytest.approx((last - first) / (stream.completion_tokens - 1)) \
        if stream.completion_tokens > 1 else record.tpot_s is None


def test_http_error_is_a_failed_request_with_its_status():
    record = _measure([], status=503, body=b'{"error": "overloaded"}')
    assert (record.success, record.error) == (False, 'HTTP 503: {"error": "overloaded"}')


def test_stream_without_usage_is_failed_not_guessed():
    pieces = [(0.1, b'data: {"choices": [{"text": "a"}]}\n\n'), (0.2, b"data: [DONE]\n\n")]
    record = _measure(pieces)
    assert not record.success
    assert "usage" in record.error


def test_stream_without_any_choices_is_failed():
    pieces = [(0.1, b'data: {"choices": [], "usage": {"completion_tokens": 0, "prompt_tokens": 3}}\n\n')]
    record = _measure(pieces)
    assert (record.success, record.error.startswith("the stream ended without a chunk")) == (False, True)


def test_error_message_in_stream_is_failed():
    pieces = [(0.1, b'data: {"choices": [{"text": "a"}]}\n\n'),
              (0.2, b'data: {"error": {"message": "KV cache exhausted", "code": 500}}\n\n')]
    record = _measure(pieces)
    assert not record.success
    assert "KV cache exhausted" in record.error


def test_connection_reset_mid_stream_is_failed():
    pieces = [(0.1, b'data: {"choices": [{"text": "a"}]}\n\n'), (0.2, b'data: {"choices": []}\n\n')]
    record = _measure(pieces, fail_after=1)
    assert (record.success, record.error.split(":")[0]) == (False, "ReadError")


def test_cuts_between_newlines_and_inside_utf8_keep_the_timing():
    message = 'data: {"choices": [{"text": "日本"}]}\n\n'.encode()
    usage = b'data: {"choices": [], "usage": {"completion_tokens": 2, "prompt_tokens": 5}}\n\ndata: [DONE]\n\n'
    inside_char = message.index("日".encode()) + 1
    pieces = [(0.1, message[:inside_char]), (0.1, message[inside_char:-1]), (0.1, message[-1:]),
              (0.3, message[:-1]), (0.3, message[-1:]), (0.4, usage)]
    record = _measure(pieces)
    assert (record.success, record.ttft_s, record.latency_s, record.output_tokens) == (True, 0.1, 0.3, 2)
    assert record.tpot_s == pytest.approx(0.2)


def test_a_200_that_is_not_an_sse_stream_is_a_failed_request_naming_the_content_type():
    async def go():
        def handle(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json={"choices": []})

        async with httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://fake") as client:
            return await stream_completion(client, PAYLOAD)

    record = asyncio.run(go())
    assert not record.success
    assert "not an SSE stream" in record.error and "application/json" in record.error
