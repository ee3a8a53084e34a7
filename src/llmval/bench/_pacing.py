"""`python -m llmval bench --pacing`: does an open-loop run send each request when its schedule says?

Against the calibration source (short streams: 5 ms to the first chunk, 4 tokens), at each target rate
the suite's generator (one process, the wire client, as the perf gates run it) sends `rate × seconds`
requests on vLLM's arrival schedule (gamma gaps, burstiness 1, rescaled so the last arrival is at N/R;
`vllm_offsets`), unbounded concurrency. Per request the lag is send time − scheduled time (the record
keeps both; latency is reported from either). Achieved rate = N / (last send − schedule start), which is
the target exactly when nothing is late. `vllm bench serve --request-rate R` runs the same rates: its
schedule is rebuilt from its seed (it seeds numpy's global generator with `--seed` and draws one gamma
gap per request, `get_request`), its send times come from `--save-detailed` `start_times`, and since
its schedule start is not saved, its lags are measured against its least-late request (a lower bound:
the true lag is at least that). `pacing` returns `{"pacing": [{"target_rps", "achieved_rps",
"lag_p99_ms", ...}]}`.

Each row, the suite's and vLLM's, is bracketed by the client host's load probe the perf gates use
(`llmval.load.HostLoadProbe`, the calibration source's process told apart as the engine): its window is the
row's `client_host`, and where other processes kept the CPUs busy (`HostWindow.busy_reason`, the rule behind
`ClientHostBusy`) the row says so (`client_host_busy`) and is not judged (`held` is None): on a starved host
the lag measures the contention, not the generator.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time

import numpy as np

from ..load import HostLoadProbe, HostWindow, WireClient, completion_payload, percentile, run_batch, vllm_offsets
from ._source import MODEL, Schedule, SourceFleet
from ._vllm import VllmBench, VllmRun

SCHEDULE = Schedule(ttft_s=0.005, interval_s=0.005, tokens_per_chunk=1, output_len=4)
LAG_P99_GOAL_MS = 1.0
RATE_TOLERANCE = 0.01


def _lag_row(rate: float, lags_s: list[float], last_send_s: float, n: int) -> dict:
    """`last_send_s`: the last send, seconds after the schedule's start."""
    ms = [x * 1000 for x in lags_s]
    achieved = n / last_send_s if last_send_s > 0 else 0.0
    return {"target_rps": rate, "achieved_rps": round(achieved, 3), "rate_error": round(achieved / rate - 1, 5),
            "lag_p50_ms": round(percentile(ms, 50), 4), "lag_p99_ms": round(percentile(ms, 99), 4),
            "lag_max_ms": round(max(ms), 4), "requests": n}


def with_client_host(row: dict, window: HostWindow) -> dict:
    """`row` with the client host's window; a busy one makes a judged row not judged (`held` None), saying why."""
    row["client_host"] = window.as_json()
    row["client_host_busy"] = window.busy_reason
    if window.is_busy and "held" in row:
        row["held"] = None
    return row


def verdict_words(row: dict) -> str:
    """How a row's line ends: ok or MISSES (the suite's rows), and, on a busy client host, that the row measured
    the contention (the perf gates' rule: not judged)."""
    words = "" if "held" not in row else "ok" if row["held"] else "MISSES" if row["held"] is not None else "not judged"
    if busy := row.get("client_host_busy"):
        window = row["client_host"]
        words += (f"{', ' if words else ''}client host busy: {busy} (load {window['load_avg'][0]:.2f}, "
                  f"this process tree {window['suite_cores']:.2f} cores, the source {window['engine_cores'] or 0:.2f})")
    return words


async def _suite(url: str, n: int, offsets: list[float]) -> tuple[list, float]:
    payload = json.dumps(completion_payload(model=MODEL, prompt="pace " * 8, output_len=SCHEDULE.output_len,
                                            temperature=0.0, ignore_eos=True)).encode()
    async with WireClient(url, timeout_s=60) as client:
        in_flight = max(16, round(n / offsets[-1] * 0.05)) if offsets[-1] > 0 else 16
        await client.warm(min(in_flight, 512))
        start = time.perf_counter() + 0.05
        records = await run_batch(client, [payload] * n, n, time.perf_counter, offsets, start=start)
    return records, start


def vllm_schedule(n: int, rate: float, seed: int) -> list[float]:
    """vLLM's arrival offsets for `--seed seed --request-rate rate` (burstiness 1, no ramp-up), as `get_request`
    draws them after `main` seeded numpy's global generator."""
    np.random.seed(seed)
    delays = [float(np.random.gamma(shape=1.0, scale=1.0 / rate)) for _ in range(n)]
    for i in range(1, n):
        delays[i] += delays[i - 1]
    scale = (n / rate) / delays[-1] if delays[-1] else 1.0
    return [d * scale for d in delays]


def _vllm(bench: VllmBench, url: str, rate: float, n: int, args: argparse.Namespace, stamp: str) -> dict:
    probe = HostLoadProbe.for_endpoint(url)
    probe.start()
    row = _vllm_row(bench, url, rate, n, args, stamp)
    window = probe.stop()
    return with_client_host(row, window)


def _vllm_row(bench: VllmBench, url: str, rate: float, n: int, args: argparse.Namespace, stamp: str) -> dict:
    seed = secrets.randbelow(2**31)
    run = VllmRun(base_url=url, model=MODEL, tokenizer=args.tokenizer, input_len=8, output_len=SCHEDULE.output_len,
                  concurrency=n, num_prompts=n, warmups=0, seed=seed, request_rate=rate, max_concurrency=None)
    result = bench.run(run, args.out, f"vllm-pacing-r{rate:g}-{stamp}.json")
    starts = result.get("start_times") or []
    if len(starts) != n:
        return {"target_rps": rate, "error": f"vllm bench serve saved {len(starts)} start_times for {n} requests"}
    offsets = vllm_schedule(n, rate, seed)
    origin = min(s - o for s, o in zip(starts, offsets, strict=True))  # its least-late request
    lags = [s - o - origin for s, o in zip(starts, offsets, strict=True)]
    row = _lag_row(rate, lags, max(starts) - origin, n)
    row["lags_relative_to_least_late"] = True
    row["failed"] = result.get("failed")
    return row


def pacing(bench: VllmBench | None, args: argparse.Namespace, stamp: str) -> dict:
    rows, vllm_rows = [], []
    with SourceFleet(SCHEDULE, processes=1) as fleet:
        for rate in args.pacing_rates:
            n = max(20, round(rate * args.pacing_seconds))
            offsets = vllm_offsets(n, rate, secrets.token_hex(4))
            probe = HostLoadProbe.for_endpoint(fleet.url)  # the source's process is the "engine" here
            probe.start()
            records, start = asyncio.run(_suite(fleet.url, n, offsets))
            window = probe.stop()
            lags = [r.lag_s for r in records if r.lag_s is not None]
            row = _lag_row(rate, lags, max(r.start_time for r in records) - start, n)
            ok = [r for r in records if r.success]
            row["failed"] = n - len(ok)
            if ok:
                row["ttft_p99_ms_from_send"] = round(percentile([r.ttft_s * 1000 for r in ok], 99), 3)
                row["ttft_p99_ms_from_schedule"] = round(percentile([r.ttft_scheduled_s * 1000 for r in ok], 99), 3)
            row["held"] = abs(row["rate_error"]) <= RATE_TOLERANCE and row["lag_p99_ms"] <= LAG_P99_GOAL_MS
            with_client_host(row, window)
            late = fleet.lateness()
            row["source_late_max_ms"] = round(late["late_max_ms"], 3)
            rows.append(row)
            line = (f"suite  {rate:>7g} req/s: achieved {row['achieved_rps']:.2f} ({row['rate_error']:+.2%}), lag p50 "
                    f"{row['lag_p50_ms']:.3f} p99 {row['lag_p99_ms']:.3f} max {row['lag_max_ms']:.2f} ms, "
                    f"{row['failed']} failed: {verdict_words(row)}")
            print(line, flush=True)
            if bench is not None:
                vrow = _vllm(bench, fleet.url, rate, n, args, stamp)
                vllm_rows.append(vrow)
                if "error" in vrow:
                    print(f"vllm   {rate:>7g} req/s: {vrow['error']}", flush=True)
                else:
                    print(f"vllm   {rate:>7g} req/s: achieved {vrow['achieved_rps']:.2f} ({vrow['rate_error']:+.2%}), "
                          f"lag p50 {vrow['lag_p50_ms']:.3f} p99 {vrow['lag_p99_ms']:.3f} max {vrow['lag_max_ms']:.2f}"
                          " ms (vs its least-late request)" + (f": {words}" if (words := verdict_words(vrow)) else ""),
                          flush=True)
            (args.out / f"pacing-{stamp}.json").write_text(json.dumps(  # after every rate: kept if cut short
                {"schedule": SCHEDULE.__dict__, "pacing": rows, "vllm_pacing": vllm_rows}, indent=1), encoding="utf-8")
    return {"pacing": rows, "vllm_pacing": vllm_rows}
