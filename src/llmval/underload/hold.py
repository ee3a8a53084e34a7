"""Hold an engine at C streams in flight (closed loop) until told to stop, and say how well it was held.

`LoadHold` runs C workers; each sends the perf section's streamed completion (`llmval.load.completion_payload`:
`input_len` prompt tokens, `output_len` tokens, EOS ignored where the engine honours it, the pinned
temperature), each prompt unique (so the prefix cache does not shorten the load), and sends the next one as soon
as its stream ends. Every request's interval (sent, ended) is kept on `time.perf_counter`, so for any window
(a probe's ask) `in_flight(window)` is the load's exact time-weighted mean number of requests in flight:
whether the engine was really held at C while the probe was being answered.

    hold = LoadHold(send, payloads, concurrency=4)
    await hold.start(); await hold.wait_full(timeout_s=60)
    ... t0 = time.perf_counter(); probe.ask(); window = Window(t0, time.perf_counter()) ...
    await hold.stop(); hold.in_flight(window), hold.failures(window)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from ..core.errors import NotReady
from ..load import RequestRecord

Clock = Callable[[], float]
Send = Callable[[dict, RequestRecord], Awaitable[RequestRecord]]
SETTLE_S = 1.0
"""How long C requests must have been in flight together before the probes are asked."""


@dataclass(frozen=True)
class Window:
    """A stretch of time on the hold's clock (a probe's ask)."""

    start: float
    end: float

    @property
    def duration_s(self) -> float:
        return self.end - self.start


@dataclass
class Interval:
    """One load request: sent at `start`, its stream ended at `end` (None: still in flight)."""

    start: float
    end: float | None = None
    error: str = ""
    tokens: int | None = None


def overlap(interval: Interval, window: Window, now: float) -> float:
    """Seconds of `window` during which `interval`'s request was in flight."""
    end = interval.end if interval.end is not None else now
    return max(0.0, min(end, window.end) - max(interval.start, window.start))


def mean_in_flight(intervals: list[Interval], window: Window, now: float) -> float:
    """The time-weighted mean number of requests in flight over `window` (0 for an empty window)."""
    if window.duration_s <= 0:
        return 0.0
    return sum(overlap(i, window, now) for i in intervals) / window.duration_s


@dataclass
class LoadHold:
    """C closed-loop streams, each sending `next_payload()` again as soon as its last request ended."""

    send: Send
    next_payload: Callable[[], dict]
    concurrency: int
    clock: Clock = time.perf_counter
    intervals: list[Interval] = field(default_factory=list)
    _tasks: list[asyncio.Task] = field(default_factory=list)
    _stopping: bool = False
    _in_flight: int = 0

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._worker()) for _ in range(self.concurrency)]

    async def _worker(self) -> None:
        while not self._stopping:
            interval = Interval(self.clock())
            self.intervals.append(interval)
            self._in_flight += 1
            try:
                record = await self.send(self.next_payload(), RequestRecord())
                interval.error, interval.tokens = record.error, record.output_tokens
            finally:
                interval.end = self.clock()
                self._in_flight -= 1
            if interval.error:
                await asyncio.sleep(0.05)  # a refused request is not load: do not spin on a failing server

    async def wait_full(self, timeout_s: float, settle_s: float = SETTLE_S) -> float:
        """Wait until C requests have been in flight for `settle_s` together (their prefills are in the engine's
        batch); NotReady after `timeout_s` naming what was in flight and why requests failed. Returns the wait."""
        began = self.clock()
        full_since: float | None = None
        while True:
            now = self.clock()
            full_since = (full_since or now) if self._in_flight >= self.concurrency else None
            if full_since is not None and now - full_since >= settle_s:
                return now - began
            if self.clock() - began > timeout_s:
                raise NotReady(f"the load did not reach {self.concurrency} streams in flight within {timeout_s:g} s "
                               f"({self._in_flight} in flight; {self.failed} of {len(self.intervals)} requests "
                               f"failed{': ' + self.first_error if self.first_error else ''})")
            if self._tasks and all(t.done() for t in self._tasks):
                for task in self._tasks:
                    task.result()  # a worker that died raises here
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        """Stop sending and cut the streams still in flight (their intervals end now)."""
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def failed(self) -> int:
        return sum(1 for i in self.intervals if i.error)

    @property
    def first_error(self) -> str:
        return next((i.error for i in self.intervals if i.error), "")

    def in_flight(self, window: Window) -> float:
        """The load's mean requests in flight during `window` (a probe's own request not counted)."""
        return mean_in_flight(self.intervals, window, self.clock())

    def failures(self, window: Window) -> list[str]:
        """Errors of load requests that ended inside `window`."""
        return [i.error for i in self._ended_in(window) if i.error]

    def _ended_in(self, window: Window) -> Iterator[Interval]:
        return (i for i in self.intervals if i.end is not None and window.start <= i.end <= window.end)
