"""A load run over worker processes, each an asyncio loop with its own wire client, measured as one run.

One Python process reads SSE events at a bounded rate (tens of µs of CPU each, see `llmval.io.wire`); at GPU rates
(tens of thousands of events/s) the client would measure its own queueing. Here `workers` processes each run
an event loop with a `WireClient`, a share of the requests (round-robin) and of the concurrency (C split as
evenly as it goes). Each opens its connections and warms up, then all wait at a barrier for one start time
that the parent sets a little in the future; closed-loop shares start at it, open-loop shares (`offsets`)
send each request at start + its offset (arrivals are assigned round-robin, so each worker sees a thinned
copy of the same arrival process). The run's duration is from that start to the last worker's end, the
requests are merged into one `RunMetrics`, so the numbers mean what `run_load`'s mean. `time.perf_counter`
is CLOCK_MONOTONIC on Linux: one clock for every process of the machine. Each worker reports its CPU time
over the measured window (user + system), so the client's own cost is part of every result.

    run, cpu = run_load_parallel("http://127.0.0.1:8000", workload, workers=8, prompts=texts, endpoint="gpu")
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import secrets
import time
from dataclasses import dataclass, field

from ._request import RequestRecord, WireClient, completion_payload, unverified_counts
from ._runner import LoadRun, Workload, run_batch
from ._stats import compute_metrics

START_AHEAD_S = 0.2
"""The start time is set this far ahead of the barrier's release, so every worker is waiting for it."""


@dataclass(frozen=True)
class _Share:
    base_url: str
    headers: dict[str, str]
    payloads: list[bytes]
    warmups: list[bytes]
    concurrency: int
    timeout_s: float
    offsets: list[float] | None


@dataclass
class ClientCpu:
    """The client's CPU over the measured window: per worker process, user + system seconds."""

    workers: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def total_s(self) -> float:
        return sum(self.workers)

    def as_json(self) -> dict:
        return {"workers": len(self.workers), "cpu_s": round(self.total_s, 3),
                "per_worker_cpu_s": [round(x, 3) for x in self.workers], "wall_s": round(self.wall_s, 3),
                "cores_busy": round(self.total_s / self.wall_s, 3) if self.wall_s > 0 else None}


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


Outcome = tuple[list[RequestRecord], float, float, float]
"""A worker's measured requests, the start time, its end time and its CPU seconds over the window."""


async def _measure(share: _Share, wait_for_start) -> Outcome:
    async with WireClient(share.base_url, headers=share.headers, timeout_s=share.timeout_s) as client:
        await client.warm(share.concurrency)
        await run_batch(client, share.warmups, share.concurrency, time.perf_counter)
        start = wait_for_start()
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        cpu = _cpu()
        records = await run_batch(client, share.payloads, share.concurrency, time.perf_counter, share.offsets,
                                   start=start)
        return records, start, time.perf_counter(), _cpu() - cpu


def _worker(share: _Share, barrier, start_at, results) -> None:
    def wait_for_start() -> float:
        barrier.wait()  # every worker warmed up
        barrier.wait()  # the parent has set the start time
        return start_at.value

    try:
        results.put(asyncio.run(_measure(share, wait_for_start)))
    except BaseException as error:  # reported to the parent, which raises
        results.put(error)


def _split(n: int, parts: int) -> list[int]:
    base, extra = divmod(n, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def encode_payloads(workload: Workload, prompts: list[str]) -> list[bytes]:
    """The request bodies, encoded once (the workers only write them)."""
    return [json.dumps(completion_payload(model=workload.model, prompt=p, output_len=workload.output_len,
                                          temperature=workload.temperature, ignore_eos=workload.ignore_eos),
                       separators=(",", ":")).encode() for p in prompts]


def auto_workers(concurrency: int, *, streams_per_worker: int = 32, cores: int | None = None) -> int:
    """Workers for a run at `concurrency`: one per `streams_per_worker` streams, at most half the cores (the
    engine's own processes share the machine), at least one.

    >>> auto_workers(1, cores=16), auto_workers(64, cores=16), auto_workers(256, cores=16), auto_workers(256, cores=2)
    (1, 2, 8, 1)
    """
    cores = cores or os.cpu_count() or 1
    return max(1, min(-(-concurrency // streams_per_worker), cores // 2))


def run_load_parallel(base_url: str, workload: Workload, *, workers: int, prompts: list[str], endpoint: str,
                      timeout_s: float = 600, headers: dict[str, str] | None = None,
                      offsets: list[float] | None = None) -> tuple[LoadRun, ClientCpu]:
    """`workload` against `base_url` from `workers` processes (1: in this process); no engine counters (a
    client-side measurement). `offsets` (s from the start, one per measured request): an open-loop run."""
    workers = max(1, min(workers, workload.concurrency))
    total = workload.warmup_requests + workload.num_requests
    if len(prompts) < total:
        raise ValueError(f"{len(prompts)} prompts for {total} requests (warmup + measured)")
    if offsets is not None and len(offsets) != workload.num_requests:
        raise ValueError(f"{len(offsets)} arrival offsets for {workload.num_requests} requests")
    payloads = encode_payloads(workload, prompts[:total])
    warm, measured = payloads[: workload.warmup_requests], payloads[workload.warmup_requests:]
    concurrencies = _split(workload.concurrency, workers)
    shares = [_Share(base_url, dict(headers or {}), measured[w::workers], warm[w::workers], concurrencies[w],
                     timeout_s, offsets[w::workers] if offsets is not None else None) for w in range(workers)]
    if workers == 1:
        outcomes = [asyncio.run(_measure(shares[0], lambda: time.perf_counter() + 0.01))]
    else:
        outcomes = _spawn(shares, timeout_s)
    records = [r for recs, _, _, _ in outcomes for r in recs]
    started = outcomes[0][1]
    duration = max(end for _, _, end, _ in outcomes) - started
    unverified_counts(records, f"[{endpoint}] the measured window ({workload.key()})")
    run = LoadRun(endpoint=endpoint, workload=workload, nonce=secrets.token_hex(4), records=records, warmup=[],
                  metrics=compute_metrics(records, duration))
    return run, ClientCpu(workers=[cpu for _, _, _, cpu in outcomes], wall_s=duration)


def _spawn(shares: list[_Share], timeout_s: float) -> list[Outcome]:
    context = multiprocessing.get_context("spawn")
    barrier, start_at, results = context.Barrier(len(shares) + 1), context.Value("d", 0.0), context.Queue()
    procs = [context.Process(target=_worker, args=(share, barrier, start_at, results), daemon=True)
             for share in shares]
    for proc in procs:
        proc.start()
    try:
        barrier.wait(timeout=timeout_s)
        start_at.value = time.perf_counter() + START_AHEAD_S
        barrier.wait(timeout=timeout_s)
        outcomes = [results.get(timeout=timeout_s) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes
