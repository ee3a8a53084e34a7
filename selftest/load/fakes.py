"""A fake clock, timed streams, and an httpx MockTransport vLLM-like server (`FakeServer`) that streams SYNTHESIZED
completions at given times: the fakes the load, session, calibration and sampler self-tests share."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx


class FakeClock:
    """Time that moves only when a fake stream delivers a piece (or a test sets it)."""

    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


class TimedStream(httpx.AsyncByteStream):
    """Yields byte pieces, setting the clock to each piece's arrival time first."""

    def __init__(self, pieces: list[tuple[float, bytes]], clock: FakeClock, fail_after: int | None = None):
        self._pieces, self._clock, self._fail_after = pieces, clock, fail_after

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i, (at, piece) in enumerate(self._pieces):
            if self._fail_after is not None and i >= self._fail_after:
                raise httpx.ReadError("connection reset by peer (fake)")
            self._clock.now = max(self._clock.now, at)
            yield piece


def streaming_handler(pieces_for: Callable[[dict], list[tuple[float, bytes]]], clock: FakeClock):
    """A MockTransport handler: /v1/completions streams `pieces_for(payload)`; times are relative to now."""

    def handle(request: httpx.Request) -> httpx.Response:
        payload = json.loads(request.content)
        start = clock.now
        pieces = [(start + at, piece) for at, piece in pieces_for(payload)]
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=TimedStream(pieces, clock))

    return handle


BOS = 1


class FakeServer:
    """/tokenize, /detokenize, /metrics and streaming /v1/completions; one token per word, BOS added."""

    def __init__(self, clock: FakeClock, *, fail_every: int = 0, foreign_tokens: int = 0, tokens_per_chunk: int = 1,
                 usage_factor: int = 1, engine_share: float = 1.0):
        self.clock = clock
        self.usage_factor = usage_factor
        """A lying server (issue 42.2): usage claims this many times the tokens it streamed."""
        self.engine_share = engine_share
        """A lying proxy (issue 42.2): the engine's generation counter rises by this share of what it streams (a
        proxy in front inflated the streams, text and usage alike, that the engine sent)."""
        self.fail_every = fail_every
        self.foreign_tokens = foreign_tokens
        self.tokens_per_chunk = tokens_per_chunk
        self.generated = 0
        self.completions: list[dict] = []
        self.vocab: dict[str, int] = {}

    def _ids(self, text: str) -> list[int]:
        return [self.vocab.setdefault(w, len(self.vocab) + 10) for w in text.split()]

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/metrics":
            self.generated += self.foreign_tokens  # someone else's traffic between two scrapes
            return httpx.Response(200, text=f'vllm:generation_tokens_total{{engine="0"}} {self.generated}\n'
                                            'vllm:num_requests_running{engine="0"} 0\n'
                                            'vllm:num_requests_waiting{engine="0"} 0\n'
                                            'vllm:kv_cache_usage_perc{engine="0"} 0.25\n'
                                            'vllm:num_preemptions_total{engine="0"} 0\n'
                                            'vllm:prefix_cache_queries_total{engine="0"} 0\n'
                                            'vllm:prefix_cache_hits_total{engine="0"} 0\n')
        body = json.loads(request.content)
        if path == "/tokenize":
            ids = self._ids(body["prompt"])
            return httpx.Response(200, json={"tokens": ([BOS] if body.get("add_special_tokens", True) else []) + ids})
        if path == "/detokenize":
            words = {v: k for k, v in self.vocab.items()}
            return httpx.Response(200, json={"prompt": " ".join(words[t] for t in body["tokens"])})
        assert path == "/v1/completions"
        self.completions.append(body)
        if self.fail_every and len(self.completions) % self.fail_every == 0:
            return httpx.Response(500, json={"error": "boom"})
        n = body["max_tokens"]
        self.generated += round(n * self.engine_share)
        start = self.clock.now
        chunks = [(start + 0.05 + 0.01 * i, json.dumps({"choices": [{"text": " x" * self.tokens_per_chunk,
                                                                       "index": 0}]}))
                  for i in range(0, n, self.tokens_per_chunk)]  # a token's text per token, as a tokenizer's
        usage = {"choices": [], "usage": {"prompt_tokens": len(self._ids(body["prompt"])) + 1,
                                          "completion_tokens": n * self.usage_factor}}
        events = [*chunks, (chunks[-1][0], json.dumps(usage)), (chunks[-1][0], "[DONE]")]
        pieces = [(at, f"data: {data}\n\n".encode()) for at, data in events]
        sse = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=sse, stream=TimedStream(pieces, self.clock))
