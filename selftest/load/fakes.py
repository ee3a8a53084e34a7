"""A fake clock and an httpx MockTransport server that streams SYNTHESIZED completions at given times."""

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
