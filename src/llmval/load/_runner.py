"""A load run: warmup, then k·C streamed requests at concurrency C, timed as `vllm bench serve` does.

`benchmark_start` is taken just before the first measured request is dispatched (after warmup) and
`duration` after the last one finished, so throughput includes the prefill ramp and the drain tail,
exactly like vLLM's `benchmark_duration`. Failed requests are kept and counted, never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field

import httpx

from ..core.errors import LlmvalError
from ..core.jsontext import read_json
from ..engines import EngineAdapter
from ..engines.ranges import out_of_range
from ._arrivals import poisson_offsets
from ._engine import EngineCounters, WindowDeltas, read_counters, window_deltas
from ._prompts import Prompt, build_prompts
from ._request import (
    Clock,
    RequestRecord,
    UnverifiedTokenCount,
    WireClient,
    completion_payload,
    stream_completion,
    unverified_counts,
)
from ._sampler import EngineSamples, MetricsSampler
from ._stats import RunMetrics, compute_metrics


class OtherLoad(LlmvalError):
    """Other clients loaded the server during every measurement attempt: the run measured contention."""


@dataclass(frozen=True)
class Workload:
    """The fixed shape of a run; equal workloads are comparable runs."""

    model: str
    input_len: int
    output_len: int
    concurrency: int
    num_requests: int
    warmup_requests: int
    temperature: float = 0.0
    ignore_eos: bool = True
    request_rate: float | None = None
    """Poisson arrivals at this many requests/s (then capped by `concurrency`); None: all at once."""

    def key(self) -> str:
        eos = "ignore-eos" if self.ignore_eos else "eos"
        rate = f"-r{self.request_rate:g}" if self.request_rate is not None else ""
        return (f"in{self.input_len}-out{self.output_len}-c{self.concurrency}-n{self.num_requests}"
                f"-t{self.temperature:g}-{eos}{rate}")


@dataclass
class LoadRun:
    """A finished run: its workload, every measured request, the metrics and the engine's deltas."""

    endpoint: str
    workload: Workload
    nonce: str
    records: list[RequestRecord]
    warmup: list[RequestRecord]
    metrics: RunMetrics
    engine: WindowDeltas = field(default_factory=lambda: window_deltas(None, None))
    prompt_tokens_expected: list[int | None] = field(default_factory=list)
    engine_samples: EngineSamples | None = None
    """The engine's /metrics sampled through the measured window (queue, KV usage, preemptions, prefix cache)."""
    prompts_counted_by: str = ""
    """How the prompts' lengths were counted (`Prompt.counted_by` of the first: /tokenize, or usage where it failed)."""

    @property
    def errors(self) -> list[str]:
        return [r.error for r in self.records if not r.success]

    @property
    def foreign_tokens(self) -> float | None:
        own = sum(r.output_tokens or 0 for r in self.records)  # the window opens after warmup
        return self.engine.foreign_tokens(own)

    @property
    def counters_impossible(self) -> str:
        """Why the window's engine counters measure nothing ("" when they may): a counter that dropped
        (`WindowDeltas.counters_impossible`), or a generation counter that grew by less than the tokens this run's
        successful streams carried (their usage, verified against what arrived: `llmval.io.sse.StreamCounts`)."""
        if self.engine.counters_impossible or self.engine.generation_tokens is None:
            return self.engine.counters_impossible
        own = sum(r.output_tokens or 0 for r in self.records if r.success)
        return out_of_range("generation_beyond_own", self.engine.generation_tokens - own,
                            values=f"the generation counter grew {self.engine.generation_tokens:g} over the window, "
                                   f"this run's {sum(r.success for r in self.records)} successful streams carried "
                                   f"{own} tokens") or ""

    def as_json(self) -> dict:
        """vLLM's result-JSON keys plus per-request lists (as `--save-detailed`) and the workload."""
        return {
            "endpoint": self.endpoint,
            "workload": asdict(self.workload),
            "nonce": self.nonce,
            "prompts_counted_by": self.prompts_counted_by,
            **self.metrics.as_vllm_json(),
            "spec_decode_acceptance_length": self.engine.spec_acceptance_length,
            "spec_decode_acceptance_rate": self.engine.spec_acceptance_rate,
            "engine_generation_tokens_delta": self.engine.generation_tokens,
            "foreign_tokens": self.foreign_tokens,
            "input_lens": [r.prompt_tokens for r in self.records],
            "output_lens": [r.output_tokens for r in self.records],
            "ttfts": [r.ttft_s for r in self.records],
            "tpots": [r.tpot_s for r in self.records],
            "e2els": [r.latency_s for r in self.records],
            "start_times": [r.start_time for r in self.records],
            "chunks": [r.chunks for r in self.records],
            "output_chunks": [r.output_chunks for r in self.records],
            "output_bytes": [r.output_bytes for r in self.records],
            "errors": [r.error for r in self.records],
            "schedule_lags": [r.lag_s for r in self.records] if self.workload.request_rate is not None else [],
            "engine_samples": self.engine_samples.as_json() if self.engine_samples is not None else None,
        }


Send = Callable[[dict | bytes, RequestRecord], Awaitable[RequestRecord]]
"""Sends one request, filling the record it is given (`_request.stream_completion` or `WireClient.stream`)."""

PROGRESS_EVERY_S = 15.0
"""How often a long run says where it is (`run_load(progress=...)`): a C=4 attempt on two shared cores takes
about 1.5 minutes, silent before (issue 34.7). One terminal line costs tens of microseconds of the loop."""

SPIN_S = 0.0015
"""Open loop: the last stretch before a send time is waited in zero-timeout loop turns (streams keep being
read), because the selector's timeouts round up to the millisecond."""


def sender(client: httpx.AsyncClient | WireClient, clock: Clock = time.perf_counter) -> Send:
    """The send function for either client (the wire client times with its own clock)."""
    if isinstance(client, WireClient):
        return lambda payload, record: client.stream(payload, record=record)

    async def send(payload: dict | bytes, record: RequestRecord) -> RequestRecord:
        body = payload if isinstance(payload, dict) else read_json(payload, "a load request's payload")
        return await stream_completion(client, body, clock=clock, record=record)

    return send


async def sleep_until(due: float, clock: Clock = time.perf_counter) -> None:
    """Wait until `clock()` reaches `due` (within tens of µs when the loop is not busy), reading streams meanwhile."""
    while (wait := due - clock()) > 0:
        await asyncio.sleep(wait - SPIN_S if wait > SPIN_S else 0)


@dataclass
class _Progress:
    """Where a run is, said every `every_s` by a task of its own: the phase and its requests done."""

    say: Callable[[str], None] | None
    every_s: float = PROGRESS_EVERY_S
    phase: str = "building prompts"
    total: int = 0
    done: int = 0
    started: float = field(default_factory=time.monotonic)

    def enter(self, phase: str, total: int) -> None:
        self.phase, self.total, self.done = phase, total, 0

    def finished(self, record: RequestRecord) -> RequestRecord:
        self.done += 1
        return record

    async def report(self) -> None:
        while self.say is not None:
            await asyncio.sleep(self.every_s)
            counted = f": {self.done}/{self.total} requests done" if self.total else ""
            self.say(f"{self.phase}{counted} ({time.monotonic() - self.started:.0f} s)")


async def run_batch(client: httpx.AsyncClient | WireClient | Send, payloads: list, concurrency: int,
                     clock: Clock, offsets: list[float] | None = None,
                     start: float | None = None, progress: _Progress | None = None) -> list[RequestRecord]:
    """All payloads, at most `concurrency` at once; with `offsets`, request i is due at start + offsets[i]
    (open loop: absolute times, a late request never delays the next one), then waits for a slot like vLLM's.
    Each record keeps its `scheduled_time`, so latency from the schedule and the send lag can be reported."""
    send = client if callable(client) and not isinstance(client, httpx.AsyncClient | WireClient) \
        else sender(client, clock)
    semaphore = asyncio.Semaphore(concurrency)
    start = clock() if start is None else start

    async def limited(i: int, payload: dict | bytes) -> RequestRecord:
        record = RequestRecord()
        if offsets is not None:
            record.scheduled_time = start + offsets[i]
            await sleep_until(record.scheduled_time, clock)
        async with semaphore:
            done = await send(payload, record)
        return progress.finished(done) if progress is not None else done

    return list(await asyncio.gather(*(limited(i, p) for i, p in enumerate(payloads))))


async def run_load(client: httpx.AsyncClient, workload: Workload, *, endpoint: str, engine: type[EngineAdapter],
                   prompts: list[Prompt] | None = None, nonce: str | None = None,
                   clock: Clock = time.perf_counter, metrics_client: httpx.AsyncClient | None = None,
                   before_window: Callable[[], Awaitable[None]] | None = None,
                   streamer: WireClient | None = None, sample_interval_s: float | None = None,
                   progress: Callable[[str], None] | None = None,
                   progress_every_s: float = PROGRESS_EVERY_S) -> LoadRun:
    """Warm up, then run `workload` against `client`'s server; prompts are built unless given.

    `engine` is the server's adapter class (`llmval.engines.adapter_class`): it names the counters read
    around the measured window and computes speculative acceptance over it.
    `before_window` is awaited between the warmup and the measured window (e.g. wait for an idle server).
    `streamer`: the client of the streamed requests (the perf gates pass a `WireClient`: far less CPU per event
    than httpx); `client` still builds the prompts and reads the counters. None: `client` streams too.
    `sample_interval_s`: sample the engine's /metrics this often through the measured window (`_sampler`).
    `progress`: told every `PROGRESS_EVERY_S` where the run is (`warmup: 2/4 requests done (31 s)`).
    """
    where = _Progress(progress, progress_every_s)
    reporter = asyncio.create_task(where.report()) if progress is not None else None
    try:
        return await _run_load(client, workload, endpoint=endpoint, engine=engine, prompts=prompts, nonce=nonce,
                               clock=clock, metrics_client=metrics_client, before_window=before_window,
                               streamer=streamer, sample_interval_s=sample_interval_s, where=where)
    finally:
        if reporter is not None:
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporter


CLAIM_SLACK = 0.02
"""How far usage's claims may run above the engine's own generation counter over a window (a share of the claims,
plus one token per request) before they are not believed."""


def claims_beyond_engine(records: list[RequestRecord], deltas: WindowDeltas, what: str) -> None:
    """UnverifiedTokenCount when the requests' usage claims more tokens than the engine's own generation counter
    rose by over the window (a second source beside the stream: a proxy that rewrites usage does not rewrite the
    engine's /metrics)."""
    claimed = sum(r.output_tokens or 0 for r in records if r.success)
    if deltas.generation_tokens is None or not claimed:
        return
    if claimed - deltas.generation_tokens > CLAIM_SLACK * claimed + len(records):
        raise UnverifiedTokenCount(
            f"{what}: usage claims {claimed} completion tokens, but the engine's generation counter rose by "
            f"{deltas.generation_tokens:.0f} over the window: {claimed - deltas.generation_tokens:.0f} tokens were "
            "claimed that the engine did not generate, so no rate from usage is a measurement (a proxy rewriting "
            "usage? a counter reset would show as an engine restart)")


async def _run_load(client: httpx.AsyncClient, workload: Workload, *, endpoint: str, engine: type[EngineAdapter],
                    prompts: list[Prompt] | None, nonce: str | None, clock: Clock,
                    metrics_client: httpx.AsyncClient | None, before_window: Callable[[], Awaitable[None]] | None,
                    streamer: WireClient | None, sample_interval_s: float | None, where: _Progress) -> LoadRun:
    nonce = nonce or secrets.token_hex(4)
    total = workload.warmup_requests + workload.num_requests
    if prompts is None:
        prompts = await build_prompts(client, model=workload.model, input_len=workload.input_len, nonce=nonce,
                                      count=total, endpoint=endpoint)
    if len(prompts) < total:
        raise ValueError(f"{len(prompts)} prompts for {total} requests (warmup + measured)")
    payloads = [completion_payload(model=workload.model, prompt=p.text, output_len=workload.output_len,
                                   temperature=workload.temperature, ignore_eos=workload.ignore_eos)
                for p in prompts[:total]]
    streams = streamer if streamer is not None else client
    where.enter("warmup", workload.warmup_requests)
    warmup = await run_batch(streams, payloads[: workload.warmup_requests], workload.concurrency, clock,
                              progress=where)
    where.enter("waiting for an idle server", 0)
    if before_window is not None:
        await before_window()
    counters_client = metrics_client or client
    before: EngineCounters | None = await read_counters(counters_client, endpoint, engine)
    measured = payloads[workload.warmup_requests:]
    offsets = (poisson_offsets(len(measured), workload.request_rate, nonce)
               if workload.request_rate is not None else None)
    sampler = MetricsSampler(counters_client, endpoint, engine, interval_s=sample_interval_s, clock=clock) \
        if sample_interval_s else None
    if sampler is not None:
        await sampler.start()
    started = clock()
    where.enter("measured window", len(measured))
    try:
        records = await run_batch(streams, measured, workload.concurrency, clock, offsets, progress=where)
        duration = clock() - started
    finally:
        samples = await sampler.stop() if sampler is not None else None
    unverified_counts(records, f"[{endpoint}] the measured window ({workload.key()})")
    after = await read_counters(counters_client, endpoint, engine)
    deltas = window_deltas(before, after)
    claims_beyond_engine(records, deltas, f"[{endpoint}] the measured window ({workload.key()})")
    return LoadRun(endpoint=endpoint, workload=workload, nonce=nonce, records=records, warmup=warmup,
                   metrics=compute_metrics(records, duration), engine=deltas,
                   prompt_tokens_expected=[p.tokens for p in prompts[workload.warmup_requests:total]],
                   engine_samples=samples, prompts_counted_by=prompts[0].counted_by if prompts else "")
