"""Each client's ceiling: the aggregate event rate (streams × chunks per second) it still times right.

The calibration source streams 5-token chunks (EAGLE-like) at a known interval; a ladder of steps
raises concurrency / interval; at each step a client's median ITL is compared with the interval. The
ceiling is the highest rate before the first step whose median ITL departs from the truth by more than
2 % (a departing step is measured a second time before it counts, the machine being shared). The
source's own lateness per step is reported beside it, so a late source is not blamed on a client.
Three clients climb it: the suite's generator in one process (as the perf gates run it), the same
over worker processes (`llmval.load._parallel`, `auto_workers(C)` of them, as `--side-by-side` runs it), and
`vllm bench serve`. Two ladders: `cpu` (C=16..64, 400..6400 events/s, one source process: this 2-core box)
and `gpu` (C=256, 16k..96k events/s: twice and thrice the ~30k SSE chunks/s one H200 streams to 256
SmolLM2 clients; the source over several processes sharing the port, `SourceFleet`, so it is not the limit).
Each tool's CPU seconds per event over the step are reported beside its ITL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from ._calibrated import CalibratedCase, headline, suite_measure, suite_measure_parallel
from ._source import MODEL, Schedule, SourceFleet
from ._vllm import VllmBench, VllmRun

TOLERANCE = 0.02
TOKENS_PER_CHUNK = 5
WAVE_S = 1.0
# (concurrency, chunk interval in ms): 400 … 6400 events/s
LADDER = ((16, 40.0), (16, 20.0), (16, 13.333), (16, 10.0), (24, 10.0), (32, 10.0), (48, 10.0), (64, 10.0))
# C=256: 16k … 96k events/s (one H200 streams ~30k chunks/s to 256 SmolLM2 clients)
GPU_LADDER = ((256, 16.0), (256, 8.0), (256, 5.333), (256, 4.0), (256, 3.2), (256, 2.667))
LADDERS = {"cpu": LADDER, "gpu": GPU_LADDER}


@dataclass(frozen=True)
class Step:
    concurrency: int
    interval_ms: float

    @property
    def events_per_s(self) -> float:
        return self.concurrency * 1000 / self.interval_ms

    @property
    def output_len(self) -> int:
        chunks = round(WAVE_S * 1000 / self.interval_ms) + 1
        return 1 + TOKENS_PER_CHUNK * (chunks - 1)


def _schedule(step: Step) -> Schedule:
    return Schedule(ttft_s=0.05, interval_s=step.interval_ms / 1000, tokens_per_chunk=TOKENS_PER_CHUNK,
                    output_len=step.output_len)


def _cpu_s(pid: int | None) -> float:
    if pid is None:
        times = os.times()
        return times.user + times.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(tool: str, base_url: str, step: Step, bench: VllmBench | None, tokenizer: Path,
             out: Path) -> tuple[float, float | None]:
    """The tool's median ITL (ms) over one wave of `concurrency` streams, after a warmup wave; and its CPU
    seconds per event (None where not measured)."""
    case = CalibratedCase(concurrency=step.concurrency, num_requests=step.concurrency, warmups=step.concurrency)
    events = step.concurrency * (step.output_len - 1) // TOKENS_PER_CHUNK + step.concurrency
    if tool == "suite":
        cpu = _cpu_s(None)
        result = asyncio.run(suite_measure(base_url, model=MODEL, input_len=16, output_len=step.output_len,
                                           case=case))
        per_event = (_cpu_s(None) - cpu) / (2 * events)  # warmup wave + measured wave
    elif tool == "suite-workers":
        result = suite_measure_parallel(base_url, model=MODEL, input_len=16, output_len=step.output_len, case=case,
                                        workers=0)
        per_event = result["client_cpu"]["cpu_s"] / events
    else:
        assert bench is not None
        run = VllmRun(base_url=base_url, model=MODEL, tokenizer=tokenizer, input_len=16, output_len=step.output_len,
                      concurrency=step.concurrency, num_prompts=step.concurrency, warmups=step.concurrency,
                      seed=secrets.randbelow(2**31))
        cpu = _cpu_s(bench.proc.pid)
        result = bench.run(run, out, f"vllm-ceiling-c{step.concurrency}-{run.seed}.json")
        per_event = (_cpu_s(bench.proc.pid) - cpu) / (2 * events)  # warmup wave + measured wave (+ its setup)
    return headline(result)["median_itl_ms"], per_event


def ceiling(tool: str, fleet: SourceFleet, bench: VllmBench | None, tokenizer: Path, out: Path,
            ladder: tuple[tuple[int, float], ...] = LADDER) -> tuple[float, list[dict]]:
    """The tool's ceiling (events/s; 0 when even the first step departs) and every step measured."""
    best, rows = 0.0, []
    for concurrency, interval_ms in ladder:
        step = Step(concurrency, interval_ms)
        fleet.set_schedule(_schedule(step))
        attempts, cpu = [], []
        for _ in range(2):
            itl, per_event = _measure(tool, fleet.url, step, bench, tokenizer, out)
            attempts.append(itl)
            cpu.append(per_event)
            if abs(itl / interval_ms - 1) <= TOLERANCE:
                break
        source = fleet.lateness()
        held = abs(attempts[-1] / interval_ms - 1) <= TOLERANCE
        rows.append({"tool": tool, "events_per_s": round(step.events_per_s), "concurrency": concurrency,
                     "interval_ms": interval_ms, "median_itl_ms": attempts, "held": held,
                     "client_cpu_us_per_event": [round(c * 1e6, 2) if c is not None else None for c in cpu],
                     "source_late_max_ms": round(source["late_max_ms"], 2),
                     "source_late_over_1ms": source["late_over_1ms"], "source_events": source["events"],
                     "source_processes": source["processes"]})
        print(f"{tool:>13} {step.events_per_s:>7.0f} ev/s  C={concurrency:<3} interval {interval_ms:>6.2f} ms  "
              f"median ITL {', '.join(f'{a:.3f}' for a in attempts)} ms  "
              f"{'ok' if held else 'DEPARTS'}  client {cpu[-1] * 1e6 if cpu[-1] else 0:.1f} µs CPU/event  "
              f"(source late max {source['late_max_ms']:.1f} ms, "
              f"{source['late_over_1ms']}/{source['events']} chunks > 1 ms)", flush=True)
        if not held:
            break
        best = step.events_per_s
    return best, rows


def ceilings(bench: VllmBench | None, args: argparse.Namespace, stamp: str) -> dict:
    """The tools' ceilings on one source (fleet); the keys for the bench's JSON line."""
    ladder_name = getattr(args, "ceiling_ladder", "cpu")
    ladder = LADDERS[ladder_name]
    cores = os.cpu_count() or 1
    processes = 1 if ladder_name == "cpu" else max(1, min(4, cores // 4))
    tools = ("suite", "suite-workers", "vllm") if bench is not None else ("suite", "suite-workers")
    found: dict[str, float | None] = {f"{t.replace('-', '_')}_ceiling_events_s": None for t in tools}
    rows: list[dict] = []
    started = time.monotonic()
    first = Step(*ladder[0])
    with SourceFleet(_schedule(first), processes=processes) as fleet:
        for tool in tools:
            value, steps = ceiling(tool, fleet, bench, args.tokenizer, args.out, ladder)
            found[f"{tool.replace('-', '_')}_ceiling_events_s"] = round(value)
            rows += steps
            _write(args.out / f"ceiling-{stamp}.json", ladder_name, cores, processes, rows, found)  # kept if cut short
    top = ladder[-1][0] * 1000 / ladder[-1][1]
    print(f"ceiling (median ITL within {TOLERANCE:.0%} of truth; ladder {ladder_name}, top {top:.0f} events/s; "
          f"source over {processes} process(es)): suite (one process, as the perf gates run it) "
          f"{found['suite_ceiling_events_s']} events/s, suite over worker processes "
          f"{found['suite_workers_ceiling_events_s']} events/s, vllm bench serve "
          f"{found.get('vllm_ceiling_events_s')} events/s ({time.monotonic() - started:.0f} s)")
    return found


def _write(path: Path, ladder: str, cores: int, processes: int, rows: list[dict], found: dict) -> None:
    path.write_text(json.dumps({"ladder": ladder, "cpu_count": cores, "source_processes": processes, "steps": rows,
                                **found}, indent=1), encoding="utf-8")
