"""Each client's ceiling: the aggregate event rate (streams × chunks per second) it still times right.

The calibration source streams 5-token chunks (EAGLE-like) at a known interval; a ladder of steps
raises concurrency / interval; at each step a client's median ITL is compared with the interval. The
ceiling is the highest rate before the first step whose median ITL departs from the truth by more than
2 % (a departing step is measured a second time before it counts, the machine being shared). The
source's own lateness per step is reported beside it, so a late source is not blamed on a client.
Three clients climb it: the suite's generator in one process (as the perf gates run it), the same
split over two processes (one event loop per core, `llmval.load._parallel`), and `vllm bench serve`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

import httpx

from ._calibrated import CalibratedCase, headline, suite_measure, suite_measure_parallel
from ._source import MODEL, Schedule, source_process
from ._vllm import VllmBench, VllmRun

TOLERANCE = 0.02
TOKENS_PER_CHUNK = 5
WAVE_S = 1.0
# (concurrency, chunk interval in ms): 400 … 6400 events/s
LADDER = ((16, 40.0), (16, 20.0), (16, 13.333), (16, 10.0), (24, 10.0), (32, 10.0), (48, 10.0), (64, 10.0))


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


def _set_schedule(base_url: str, step: Step) -> None:
    body = {"ttft_s": 0.05, "interval_s": step.interval_ms / 1000, "tokens_per_chunk": TOKENS_PER_CHUNK,
            "output_len": step.output_len}
    httpx.put(base_url + "/calibration", content=json.dumps(body), timeout=10).raise_for_status()


def _source_lateness(base_url: str) -> dict:
    return httpx.get(base_url + "/calibration", timeout=10).json()


def _measure(tool: str, base_url: str, step: Step, bench: VllmBench | None, tokenizer: Path, out: Path) -> float:
    """The tool's median ITL (ms) over one wave of `concurrency` streams, after a warmup wave."""
    case = CalibratedCase(concurrency=step.concurrency, num_requests=step.concurrency, warmups=step.concurrency)
    if tool == "suite":
        result = asyncio.run(suite_measure(base_url, model=MODEL, input_len=16, output_len=step.output_len,
                                           case=case))
    elif tool == "suite-2proc":
        result = suite_measure_parallel(base_url, model=MODEL, input_len=16, output_len=step.output_len, case=case,
                                        workers=2)
    else:
        assert bench is not None
        run = VllmRun(base_url=base_url, model=MODEL, tokenizer=tokenizer, input_len=16, output_len=step.output_len,
                      concurrency=step.concurrency, num_prompts=step.concurrency, warmups=step.concurrency,
                      seed=secrets.randbelow(2**31))
        result = bench.run(run, out, f"vllm-ceiling-c{step.concurrency}-{run.seed}.json")
    return headline(result)["median_itl_ms"]


def ceiling(tool: str, base_url: str, bench: VllmBench | None, tokenizer: Path, out: Path,
            ladder: tuple[tuple[int, float], ...] = LADDER) -> tuple[float, list[dict]]:
    """The tool's ceiling (events/s; 0 when even the first step departs) and every step measured."""
    best, rows = 0.0, []
    for concurrency, interval_ms in ladder:
        step = Step(concurrency, interval_ms)
        _set_schedule(base_url, step)
        attempts = []
        for _ in range(2):
            itl = _measure(tool, base_url, step, bench, tokenizer, out)
            attempts.append(itl)
            if abs(itl / interval_ms - 1) <= TOLERANCE:
                break
        source = _source_lateness(base_url)
        held = abs(attempts[-1] / interval_ms - 1) <= TOLERANCE
        rows.append({"tool": tool, "events_per_s": round(step.events_per_s), "concurrency": concurrency,
                     "interval_ms": interval_ms, "median_itl_ms": attempts, "held": held,
                     "source_late_max_ms": round(source["late_max_ms"], 2),
                     "source_late_over_1ms": source["late_over_1ms"], "source_events": source["events"]})
        print(f"{tool:>11} {step.events_per_s:>7.0f} ev/s  C={concurrency:<3} interval {interval_ms:>6.2f} ms  "
              f"median ITL {', '.join(f'{a:.3f}' for a in attempts)} ms  "
              f"{'ok' if held else 'DEPARTS'}  (source late max {source['late_max_ms']:.1f} ms, "
              f"{source['late_over_1ms']}/{source['events']} chunks > 1 ms)", flush=True)
        if not held:
            break
        best = step.events_per_s
    return best, rows


def ceilings(bench: VllmBench | None, args: argparse.Namespace, stamp: str) -> dict:
    """Both tools' ceilings on one source process; the keys for the bench's JSON line."""
    schedule = Schedule(ttft_s=0.05, interval_s=0.04, tokens_per_chunk=TOKENS_PER_CHUNK)
    found: dict[str, float | None] = {"suite_ceiling_events_s": None, "suite_2proc_ceiling_events_s": None,
                                      "vllm_ceiling_events_s": None}
    rows: list[dict] = []
    with source_process(schedule) as base_url:
        for tool in ("suite", "suite-2proc", "vllm") if bench is not None else ("suite", "suite-2proc"):
            value, steps = ceiling(tool, base_url, bench, args.tokenizer, args.out)
            found[f"{tool.replace('-', '_')}_ceiling_events_s"] = round(value)
            rows += steps
    top = LADDER[-1][0] * 1000 / LADDER[-1][1]
    print(f"ceiling (median ITL within {TOLERANCE:.0%} of truth; ladder top {top:.0f} events/s): suite (one process, "
          f"as the perf gates run it) {found['suite_ceiling_events_s']} events/s, suite over 2 processes "
          f"{found['suite_2proc_ceiling_events_s']} events/s, vllm bench serve {found['vllm_ceiling_events_s']} "
          "events/s")
    (args.out / f"ceiling-{stamp}.json").write_text(json.dumps({"steps": rows, **found}, indent=1), encoding="utf-8")
    return found
