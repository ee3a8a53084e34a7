"""One streamed completion, timed exactly as `vllm bench serve` times it.

Mirrors `async_request_openai_completions` (vllm/benchmarks/lib/endpoint_request_func.py):
`t0` is taken right before the POST; every SSE message whose JSON has a non-empty `choices` list is an
output *chunk* (text may be empty); TTFT is the first chunk's time, each later chunk adds one per-chunk
ITL, and E2E latency ends at the last chunk (not at the usage message, not at `[DONE]`). Output and
prompt token counts come from the trailing `usage` message (`stream_options.include_usage`), never from
counting chunks: under speculative decoding one chunk carries several tokens.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import httpx_sse

from ..core.errors import EndpointError, ParseError
from ..core.jsontext import read_json
from ..io.bounded import HUNG
from ..io.http import httpx_errors
from ..io.wire import StreamBroken as _StreamBroken
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
    """Folds (time, payload) events into a RequestRecord, vLLM's way."""

    def __init__(self, record: RequestRecord):
        self.record = record
        self.last_chunk_at: float | None = None

    def started(self, at: float) -> None:
        self.record.start_time = at

    def message(self, data: str | bytes, at: float) -> None:
        record = self.record
        if data == "[DONE]" or data == b"[DONE]":
            return
        try:
            body = read_json(data, "SSE data")
        except ParseError as error:
            raise _StreamBroken(f"SSE data is not JSON ({error.reason}): {_text(data)[:200]!r}") from None
        if not isinstance(body, dict):
            raise _StreamBroken(f"SSE data is not a JSON object: {_text(data)[:200]!r}")
        if "error" in body and not body.get("choices"):
            raise _StreamBroken(f"error in stream: {json.dumps(body['error'])[:300]}")
        if choices := body.get("choices"):
            if self.last_chunk_at is None:
                record.ttft_s = at - record.start_time
            else:
                record.itl_s.append(at - self.last_chunk_at)
            self.last_chunk_at = at
            record.chunks += 1
            record.finish_reason = choices[0].get("finish_reason") or record.finish_reason
        elif usage := body.get("usage"):
            record.output_tokens = usage.get("completion_tokens")
            record.prompt_tokens = usage.get("prompt_tokens")

    def finish(self) -> None:
        record = self.record
        if self.last_chunk_at is None:
            raise _StreamBroken("the stream ended without a chunk carrying choices (no first token)")
        record.latency_s = self.last_chunk_at - record.start_time
        if not isinstance(record.output_tokens, int):
            raise _StreamBroken("the stream has no usage message with completion_tokens "
                                "(does the server honour stream_options.include_usage?)")
        record.success = True


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
        error = await self.post_stream(path, body, _Timing(record))
        if error:
            record.start_time = record.start_time or self.clock()  # a connect that failed: nothing was written
            record.success, record.error = False, error
        return record


async def stream_completion(client: httpx.AsyncClient, payload: dict, *, path: str = "/v1/completions",
                            clock: Clock = time.perf_counter, record: RequestRecord | None = None) -> RequestRecord:
    """POST one streaming completion and time it; never raises for a failed request (see `error`).

    `record` may come pre-filled (`scheduled_time` of an open-loop run); `start_time` is set here."""
    record = record or RequestRecord()
    timing = _Timing(record)
    record.start_time = clock()
    total_s = client.timeout.read  # the whole request's time, as every request of the suite (llmval.io.bounded)
    try:
        with httpx_errors():  # httpx's errors become ours here (llmval.io.http), the connect's included
            async with asyncio.timeout(total_s), client.stream("POST", path, json=payload) as response:
                if response.status_code != 200:
                    body = (await response.aread()).decode("utf-8", "replace")
                    record.error = f"HTTP {response.status_code}: {body[:300]}"
                    return record
                # httpx-sse splits the stream into events whatever the byte chunking; each event is timed when
                # it is complete (its blank line arrived), which is when vLLM's client times it too
                async for event in httpx_sse.EventSource(response).aiter_sse():
                    timing.message(event.data, clock())
        timing.finish()
    except _StreamBroken as broken:
        record.success = False
        record.error = str(broken)
    except EndpointError as error:  # translated at llmval.io.http's boundary
        record.success = False
        record.error = (f"not an SSE stream: {error.detail}" if error.kind == "SSEError"
                        else f"{error.kind}: {error.detail}")
    except TimeoutError:
        record.success = False
        record.error = f"no complete answer within {total_s:g} s (the whole request's time): {HUNG}"
    return record
