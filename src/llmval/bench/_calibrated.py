"""Both instruments against the calibration source: the suite's load generator and `vllm bench serve`.

Each tool measures the source at each concurrency (decode tok/s = 1000 / median TPOT, output
throughput, TTFT median and p99); the truth follows from the schedule with the same definitions
(`Schedule.truth`). The errors are relative: |measured / truth − 1|.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ..engines.base import EngineAdapter
from ..io.http import make_async_client
from ..load import WireClient, Workload, auto_workers, run_load, run_load_parallel
from ._source import Schedule, Truth
from ._vllm import VllmBench, VllmRun

METRICS = (("decode_tok_s", "decode tok/s"), ("output_throughput", "output tok/s"),
           ("median_ttft_ms", "TTFT median ms"), ("p99_ttft_ms", "TTFT p99 ms"))


@dataclass(frozen=True)
class CalibratedCase:
    concurrency: int
    num_requests: int
    warmups: int


@dataclass
class CaseResult:
    case: CalibratedCase
    truth: dict[str, float]
    suite: dict[str, float]
    vllm: dict[str, float] = field(default_factory=dict)

    def errors(self, tool: str) -> dict[str, float]:
        measured = self.suite if tool == "suite" else self.vllm
        return {k: abs(measured[k] / self.truth[k] - 1) for k, _ in METRICS if k in measured}

    def suite_vs_vllm(self) -> dict[str, float]:
        return {k: abs(self.suite[k] / self.vllm[k] - 1) for k, _ in METRICS if self.vllm.get(k)}


def truth_metrics(truth: Truth) -> dict[str, float]:
    return {"decode_tok_s": truth.decode_tok_s, "output_throughput": truth.output_throughput,
            "median_ttft_ms": truth.ttft_ms, "p99_ttft_ms": truth.ttft_ms}


def headline(result: dict) -> dict[str, float]:
    """The compared metrics out of a result JSON (vLLM's or the suite's `as_json`; same key names)."""
    return {"decode_tok_s": 1000 / result["median_tpot_ms"] if result["median_tpot_ms"] else 0.0,
            "output_throughput": result["output_throughput"], "median_ttft_ms": result["median_ttft_ms"],
            "p99_ttft_ms": result["p99_ttft_ms"], "median_itl_ms": result["median_itl_ms"],
            "failed": result.get("failed", 0)}


def suite_measure_parallel(base_url: str, *, model: str, input_len: int, output_len: int, case: CalibratedCase,
                           workers: int) -> dict:
    """The suite's load generator over `workers` processes (0: `auto_workers(C)`); its result JSON with the
    client's CPU (`client_cpu`)."""
    workload = Workload(model=model, input_len=input_len, output_len=output_len, concurrency=case.concurrency,
                        num_requests=case.num_requests, warmup_requests=case.warmups)
    prompts = [f"[calibration {i}] " + " ".join(["word"] * input_len) for i in range(case.warmups + case.num_requests)]
    run, cpu = run_load_parallel(base_url, workload, workers=workers or auto_workers(case.concurrency),
                                 prompts=prompts, endpoint="calibration-source")
    return {**run.as_json(), "client_cpu": cpu.as_json()}


async def suite_measure(base_url: str, *, model: str, input_len: int, output_len: int, case: CalibratedCase,
                        timeout_s: float = 120) -> dict:
    """The suite's load generator, exactly as the perf gates run it (one process, the wire client); its JSON."""
    workload = Workload(model=model, input_len=input_len, output_len=output_len, concurrency=case.concurrency,
                        num_requests=case.num_requests, warmup_requests=case.warmups)
    async with make_async_client(base_url, timeout_s=timeout_s, max_connections=case.concurrency + 2,
                                 asyncio_native=True) as client, WireClient(base_url, timeout_s=timeout_s) as wire:
        run = await run_load(client, workload, endpoint="calibration-source", engine=EngineAdapter, streamer=wire)
    return run.as_json()


def measure_case(base_url: str, schedule: Schedule, case: CalibratedCase, *, bench: VllmBench | None,
                 tokenizer: Path, input_len: int, output_len: int, out_dir: Path, model: str,
                 suite_workers: int = 1) -> CaseResult:
    truth = schedule.truth(output_len=output_len, concurrency=case.concurrency, num_requests=case.num_requests)
    if suite_workers > 1 and case.concurrency > 1:
        suite = headline(suite_measure_parallel(base_url, model=model, input_len=input_len, output_len=output_len,
                                                case=case, workers=suite_workers))
    else:
        suite = headline(asyncio.run(suite_measure(base_url, model=model, input_len=input_len,
                                                   output_len=output_len, case=case)))
    result = CaseResult(case=case, truth=truth_metrics(truth), suite=suite)
    if bench is not None:
        run = VllmRun(base_url=base_url, model=model, tokenizer=tokenizer, input_len=input_len,
                      output_len=output_len, concurrency=case.concurrency, num_prompts=case.num_requests,
                      warmups=case.warmups, seed=secrets.randbelow(2**31))
        result.vllm = headline(bench.run(run, out_dir, f"vllm-calibrated-c{case.concurrency}-{run.seed}.json"))
    return result


def table(results: list[CaseResult]) -> str:
    """Truth, both tools and the ratios, one line per (concurrency, metric)."""
    lines = [f"{'C':>3} {'metric':<15} {'truth':>9} {'suite':>9} {'vllm':>9} | {'suite/truth':>11} "
             f"{'vllm/truth':>10} {'suite/vllm':>10}"]
    for r in results:
        for key, label in METRICS:
            t, s, v = r.truth[key], r.suite[key], r.vllm.get(key)
            vtxt = f"{v:>9.2f}" if v is not None else f"{'-':>9}"
            lines.append(f"{r.case.concurrency:>3} {label:<15} {t:>9.2f} {s:>9.2f} {vtxt} | {s / t:>11.4f} "
                         + (f"{v / t:>10.4f} {s / v:>10.4f}" if v else f"{'-':>10} {'-':>10}"))
    return "\n".join(lines)


def summary(results: list[CaseResult]) -> dict[str, float | None]:
    suite_err = max(e for r in results for e in r.errors("suite").values())
    has_vllm = all(r.vllm for r in results)
    return {
        "suite_max_err": round(suite_err, 5),
        "vllm_max_err": round(max(e for r in results for e in r.errors("vllm").values()), 5) if has_vllm else None,
        "suite_vs_vllm_max_diff": round(max(e for r in results for e in r.suite_vs_vllm().values()), 5)
        if has_vllm else None,
    }
