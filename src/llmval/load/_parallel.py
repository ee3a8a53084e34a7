"""One event loop per core: a load run split over worker processes, measured as one run.

At thousands of SSE events per second one Python process spends its time in the HTTP stack (httpx,
httpcore, h11: ~70 % of the client's CPU per event, measured), and late reads become wrong ITLs. Here
`workers` processes each run an asyncio loop with its own httpx client and a share of the requests and
of the concurrency (C split as evenly as it goes). Each warms up its own connections, then all wait for
one start signal; the run's duration is from that signal to the last worker's end, and the requests
are merged into one `RunMetrics`, so the numbers mean what `run_load`'s mean. `time.perf_counter` is
CLOCK_MONOTONIC on Linux, one clock for every process of the machine.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import secrets
import time
from dataclasses import dataclass

from ..http import make_async_client
from ._request import RequestRecord, completion_payload
from ._runner import LoadRun, Workload, _run_batch
from ._stats import compute_metrics


@dataclass(frozen=True)
class _Share:
    base_url: str
    payloads: list[dict]
    warmups: list[dict]
    concurrency: int
    timeout_s: float


def _worker(share: _Share, ready, go, results) -> None:
    async def main() -> tuple[list[RequestRecord], float]:
        async with make_async_client(share.base_url, timeout_s=share.timeout_s,
                                     max_connections=share.concurrency + 2, asyncio_native=True) as client:
            await _run_batch(client, share.warmups, share.concurrency, time.perf_counter)
            ready.wait()  # a barrier: every worker warmed up
            await asyncio.get_running_loop().run_in_executor(None, go.wait)
            records = await _run_batch(client, share.payloads, share.concurrency, time.perf_counter)
            return records, time.perf_counter()

    try:
        results.put(asyncio.run(main()))
    except BaseException as error:  # reported to the parent, which raises
        results.put(error)


def _split(n: int, parts: int) -> list[int]:
    base, extra = divmod(n, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def run_load_parallel(base_url: str, workload: Workload, *, workers: int, prompts: list[str],
                      endpoint: str, timeout_s: float = 600) -> LoadRun:
    """`workload` against `base_url` from `workers` processes (no engine counters: a client-side measurement)."""
    workers = max(1, min(workers, workload.concurrency))
    total = workload.warmup_requests + workload.num_requests
    if len(prompts) < total:
        raise ValueError(f"{len(prompts)} prompts for {total} requests (warmup + measured)")
    payloads = [completion_payload(model=workload.model, prompt=p, output_len=workload.output_len,
                                   temperature=workload.temperature, ignore_eos=workload.ignore_eos)
                for p in prompts[:total]]
    warm, measured = payloads[: workload.warmup_requests], payloads[workload.warmup_requests:]
    context = multiprocessing.get_context("spawn")
    ready, go, results = context.Barrier(workers + 1), context.Event(), context.Queue()
    concurrencies = _split(workload.concurrency, workers)
    shares = [_Share(base_url, measured[w::workers], warm[w::workers], concurrencies[w], timeout_s)
              for w in range(workers)]
    procs = [context.Process(target=_worker, args=(share, ready, go, results), daemon=True) for share in shares]
    for proc in procs:
        proc.start()
    try:
        ready.wait(timeout=timeout_s)
        started = time.perf_counter()
        go.set()
        outcomes = [results.get(timeout=timeout_s) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    records = [r for recs, _ in outcomes for r in recs]
    duration = max(end for _, end in outcomes) - started
    return LoadRun(endpoint=endpoint, workload=workload, nonce=secrets.token_hex(4), records=records, warmup=[],
                   metrics=compute_metrics(records, duration))
