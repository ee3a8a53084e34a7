"""Why the suite's open-loop pacing falls behind on a busy client host (issue 35.3; docs/perf.md):

    .venv/bin/python -m selftest.bench.measure_pacing_busy RATE SECONDS

Open-loop pacing at RATE req/s for SECONDS against the calibration source on loopback, without and then with 2
orphan CPU burners (another user's jobs, as the client-host rule sees them), three schedulers on one event loop:
  suite:     `run_batch` (every request its own task asleep until its time, the last `SPIN_S` spun in sleep(0) turns)
  nospin:    the same tasks, each waiting with one plain asyncio.sleep
  generator: one coroutine walks the schedule (vLLM's `get_request` shape), a task per send, plain sleeps
Prints one JSON line per (burners, scheduler): lag p50/p99/max and this process's CPU per request. Bounded: six
runs of SECONDS each, the burners stopped at the end (also on an error).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import secrets
import sys
import time

from llmval.bench._pacing import MODEL, SCHEDULE
from llmval.bench._source import SourceFleet
from llmval.load import WireClient, completion_payload, percentile, run_batch, vllm_offsets
from llmval.load._request import RequestRecord
from llmval.load._runner import sender
from selftest.load.burners import orphan_burners, stop

MODES = ("suite", "nospin", "generator")


async def paced(url: str, mode: str, n: int, offsets: list[float]) -> list[RequestRecord]:
    payload = json.dumps(completion_payload(model=MODEL, prompt="pace " * 8, output_len=SCHEDULE.output_len,
                                            temperature=0.0, ignore_eos=True)).encode()
    clock = time.perf_counter
    async with WireClient(url, timeout_s=60) as client:
        await client.warm(64)
        start = clock() + 0.05
        if mode == "suite":
            return await run_batch(client, [payload] * n, n, clock, offsets, start=start)
        send = sender(client, clock)

        def record(i: int) -> RequestRecord:
            out = RequestRecord()
            out.scheduled_time = start + offsets[i]
            return out

        async def at(i: int) -> RequestRecord:
            own = record(i)
            await asyncio.sleep(max(0.0, own.scheduled_time - clock()))
            return await send(payload, own)

        if mode == "nospin":
            return list(await asyncio.gather(*(at(i) for i in range(n))))
        tasks = []
        for i in range(n):
            own = record(i)
            await asyncio.sleep(max(0.0, own.scheduled_time - clock()))
            tasks.append(asyncio.create_task(send(payload, own)))
        return list(await asyncio.gather(*tasks))


def main() -> None:
    rate, seconds = float(sys.argv[1]), float(sys.argv[2])
    n = round(rate * seconds)
    with SourceFleet(SCHEDULE, processes=1) as fleet:
        for burners in (0, 2):
            pids = orphan_burners(burners) if burners else []
            try:
                time.sleep(0.5 if burners else 0)
                for mode in MODES:
                    offsets = vllm_offsets(n, rate, secrets.token_hex(4))
                    load = round(os.getloadavg()[0], 2)
                    before = resource.getrusage(resource.RUSAGE_SELF)
                    records = asyncio.run(paced(fleet.url, mode, n, offsets))
                    after = resource.getrusage(resource.RUSAGE_SELF)
                    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                    lags = [r.lag_s * 1000 for r in records if r.lag_s is not None]
                    print(json.dumps({
                        "burners": burners, "mode": mode, "rate": rate, "n": n,
                        "ok": sum(1 for r in records if r.success), "lag_p50_ms": round(percentile(lags, 50), 3),
                        "lag_p99_ms": round(percentile(lags, 99), 3), "lag_max_ms": round(max(lags), 2),
                        "cpu_s": round(cpu, 3), "cpu_ms_per_request": round(1000 * cpu / n, 3),
                        "load_before": load}), flush=True)
            finally:
                stop(pids)


if __name__ == "__main__":
    main()
