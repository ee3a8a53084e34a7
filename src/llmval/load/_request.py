"""One streamed completion, timed exactly as `vllm bench serve` times it.

Mirrors `async_request_openai_completions` (vllm/benchmarks/lib/endpoint_request_func.py):
`t0` is taken right before the POST; every SSE message whose JSON has a non-empty `choices` list is an
output *chunk* (text may be empty); TTFT is the first chunk's time, each later chunk adds one per-chunk
ITL, and E2E latency ends at the last chunk (not at the usage message, not at `[DONE]`). Output and
prompt token counts come from the trailing `usage` message (`stream_options.include_usage`), not from
counting chunks: under speculative decoding one chunk carries several tokens. But usage is a claim: it is
taken only where what arrived could hold it (not above `max_tokens`, not below the chunks that carried output,
not above the streamed text's bytes plus one special token per chunk); else the request is not a measurement
(`unverified_count`, and `UnverifiedTokenCount` for the run). The stream is read by the suite's one SSE reader
(`llmval.io.sse`): an event after `[DONE]`, no `[DONE]`, output after a finish reason fail the request, named.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from ..core.errors import EndpointError, LlmvalError
from ..io.bounded import HUNG
from ..io.http import httpx_errors
from ..io.sse import OpenAIStream, SseSplitter, not_event_stream
from ..io.sse import StreamBroken as _StreamBroken
from ..io.wire import WireClient as _Wire

Clock = Callable[[], float]


@dataclass
class RequestRecord:
    """What one request did; times in seconds, relative to its own start unless named `start_time`."""

    success: bool = False
    start_time: float = 0.0
    ttft_s: float = 0.0
    latency_s: float = 0.0
    """E2E latency: start to the last chunk with choices."""
    itl_s: list[float] = field(default_factory=list)
    """Gaps between consecutive chunks (per chunk, not per token)."""
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    chunks: int = 0
    output_chunks: int = 0
    """Chunks that carried output text (each carries at least one token)."""
    output_bytes: int = 0
    """UTF-8 bytes of the output that arrived."""
    unverified_count: str = ""
    """Why usage's completion_tokens cannot be what streamed ("" when it can; `StreamCounts.gap`)."""
    finish_reason: str | None = None
    error: str = ""
    scheduled_time: float | None = None
    """Open-loop runs: when the schedule said to send it (same clock as `start_time`); None: closed loop."""

    @property
    def lag_s(self) -> float | None:
        """How late the request was sent against its schedule (None in a closed-loop run)."""
        return None if self.scheduled_time is None else self.start_time - self.scheduled_time

    @property
    def ttft_scheduled_s(self) -> float | None:
        """TTFT from the scheduled send time: the latency a user arriving on schedule saw (no coordinated
        omission); None in a closed-loop run."""
        lag = self.lag_s
        return None if lag is None or not self.success else self.ttft_s + lag

    @property
    def tpot_s(self) -> float | None:
        """(E2E − TTFT) / (output tokens − 1); None when the request produced at most one token."""
        if not self.success or not self.output_tokens or self.output_tokens <= 1:
            return None
        return (self.latency_s - self.ttft_s) / (self.output_tokens - 1)


def completion_payload(*, model: str, prompt: str, output_len: int, temperature: float,
                       ignore_eos: bool) -> dict:
    """The request body `vllm bench serve` sends to /v1/completions, with the temperature pinned."""
    payload = {
        "model": model,
        "prompt": prompt,
        "repetition_penalty": 1.0,
        "max_tokens": output_len,
        "temperature": temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if ignore_eos:
        payload["ignore_eos"] = True
    return payload


class _Timing:
    """Folds (time, payload) events into a RequestRecord, vLLM's way, through the suite's one reading of an event
    stream (`llmval.io.sse.OpenAIStream`: events after `[DONE]`, no `[DONE]`, output after a finish reason are
    faults); the output count is usage's claim only when what arrived could hold it (`StreamCounts.gap`)."""

    def __init__(self, record: RequestRecord, max_tokens: int | None = None):
        self.record = record
        self.max_tokens = max_tokens
        self.last_chunk_at: float | None = None
        self.reader = OpenAIStream()

    def started(self, at: float) -> None:
        self.record.start_time = at

    def message(self, data: str | bytes, at: float) -> None:
        record = self.record
        body = self.reader.read(data)
        if body is None:
            return  # [DONE]
        if choices := body.get("choices"):
            if not isinstance(choices, list) or not isinstance(choices[0], dict):
                raise _StreamBroken(f"SSE chunk's choices are not a list of objects: {_text(data)[:200]!r}")
            if self.last_chunk_at is None:
                record.ttft_s = at - record.start_time
            else:
                record.itl_s.append(at - self.last_chunk_at)
            self.last_chunk_at = at
            record.chunks += 1
            record.finish_reason = choices[0].get("finish_reason") or record.finish_reason

    def finish(self) -> None:
        record, counts = self.record, self.reader.counts
        if self.last_chunk_at is None:
            raise _StreamBroken("the stream ended without a chunk carrying choices (no first token)")
        self.reader.end()
        record.latency_s = self.last_chunk_at - record.start_time
        record.output_chunks, record.output_bytes = counts.output_chunks, counts.output_bytes
        record.output_tokens, record.prompt_tokens = counts.claimed_tokens, counts.claimed_prompt_tokens
        if not isinstance(record.output_tokens, int):
            raise _StreamBroken("the stream has no usage message with completion_tokens "
                                "(does the server honour stream_options.include_usage?)")
        if gap := counts.gap(self.max_tokens):
            record.unverified_count = gap
            raise _StreamBroken(f"{UNVERIFIED}: {gap}")
        record.success = True


UNVERIFIED = "token count not verified"
"""How a request whose usage the stream cannot back begins its error (`UnverifiedTokenCount` gathers them)."""
MAX_TOKENS_RE = re.compile(rb'"max_tokens"\s*:\s*(\d+)')


def max_tokens_of(payload: dict | bytes) -> int | None:
    """The request's max_tokens (None when it sets none), read from the body the load sends."""
    if isinstance(payload, dict):
        value = payload.get("max_tokens", payload.get("max_completion_tokens"))
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    match = MAX_TOKENS_RE.search(payload)
    return int(match.group(1)) if match else None


class UnverifiedTokenCount(LlmvalError):
    """The streams' `usage.completion_tokens` claimed more or fewer tokens than what arrived could be (above
    max_tokens, below the chunks that carried output, above what the text could hold): no rate computed from
    it is a measurement."""


def unverified_counts(records: list[RequestRecord], what: str) -> None:
    """UnverifiedTokenCount naming the first gap when any of `records` has a usage the stream cannot back."""
    bad = [r for r in records if r.unverified_count]
    if bad:
        raise UnverifiedTokenCount(
            f"{what}: {len(bad)} of {len(records)} streams claim a token count the stream cannot back; the first: "
            f"{bad[0].unverified_count}. Rates computed from usage would be made up, so none is reported (is a proxy "
            "or patched server rewriting usage? compare with the engine's own generation counter)")


def _text(data: str | bytes) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


class WireClient(_Wire):
    """The perf gates' streaming client (`llmval.io.wire`, a third of httpx's CPU per event), each stream timed
    into a RequestRecord as `stream_completion` times it.

        async with WireClient("http://127.0.0.1:8000", timeout_s=600) as client:
            record = await client.stream(payload)        # a RequestRecord, never raises for a failed request
    """

    async def stream(self, payload: dict | bytes, *, path: str = "/v1/completions",
                     record: RequestRecord | None = None) -> RequestRecord:
        """POST one streaming completion and time it; never raises for a failed request (see `error`).

        `record` may come pre-filled (e.g. `scheduled_time` of an open-loop run); `start_time` is set right
        before the request is written."""
        record = record or RequestRecord()
        body = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
        error = await self.post_stream(path, body, _Timing(record, max_tokens_of(payload)))
        if error:
            record.start_time = record.start_time or self.clock()  # a connect that failed: nothing was written
            record.success, record.error = False, error
        return record


async def stream_completion(client: httpx.AsyncClient, payload: dict, *, path: str = "/v1/completions",
                            clock: Clock = time.perf_counter, record: RequestRecord | None = None) -> RequestRecord:
    """POST one streaming completion and time it; never raises for a failed request (see `error`).

    `record` may come pre-filled (`scheduled_time` of an open-loop run); `start_time` is set here."""
    record = record or RequestRecord()
    timing = _Timing(record, max_tokens_of(payload))
    record.start_time = clock()
    total_s = client.timeout.read  # the whole request's time, as every request of the suite (llmval.io.bounded)
    try:
        with httpx_errors():  # httpx's errors become ours here (llmval.io.http), the connect's included
            async with asyncio.timeout(total_s), client.stream("POST", path, json=payload) as response:
                if response.status_code != 200:
                    body = (await response.aread()).decode("utf-8", "replace")
                    record.error = f"HTTP {response.status_code}: {body[:300]}"
                    return record
                if why := not_event_stream(response.headers.get("content-type", "")):
                    raise _StreamBroken(why)
                # the suite's one SSE reader splits the stream into events whatever the byte chunking; each event
                # is timed when it is complete (its blank line arrived), which is when vLLM's client times it too
                splitter = SseSplitter()
                async for data in response.aiter_bytes():
                    at = clock()
                    for event in splitter.feed(data):
                        timing.message(event, at)
                for event in splitter.close():
                    timing.message(event, clock())
        timing.finish()
    except _StreamBroken as broken:
        record.success = False
        record.error = str(broken)
    except EndpointError as error:  # translated at llmval.io.http's boundary
        record.success = False
        record.error = f"{error.kind}: {error.detail}"
    except TimeoutError:
        record.success = False
        record.error = f"no complete answer within {total_s:g} s (the whole request's time): {HUNG}"
    return record
