"""`python -m llmval bench`: calibrate the suite's perf instruments.

    python -m llmval bench --calibrated             # both tools vs the calibration source, C=1 and C=16
    python -m llmval bench --ceiling                # each tool's event-rate ceiling (median ITL within 2 %)
    python -m llmval bench --calibrated --ceiling   # both, one JSON line at the end
    python -m llmval bench --ceiling --ceiling-ladder gpu   # the same at C=256, 16k..96k events/s (16 cores)
    python -m llmval bench --pacing                 # open-loop pacing: achieved rate, schedule lag p99 (both tools)
    python -m llmval bench                          # the local engine side by side (ABBA rounds, 95 % CI)
                                                    # (its options: python -m llmval bench --engine-help)
    python -m llmval bench --agentic --out OUT      # multi-turn agentic sessions: TTFT by context, prefix hits
                                                    # (its options: python -m llmval bench --agentic --help)
    python -m llmval bench --correctness-under-load --out OUT  # NIAH cells and tool calls idle vs under load
                                                    # (its options: python -m llmval bench --correctness-under-load -h)
    python -m llmval bench --side-by-side --out OUT # both tools at C=1,16,64,256 and Poisson rates: OUT/summary.json
                                                    # (its options: python -m llmval bench --side-by-side --help)

Timing-sensitive: the runs hold the machine-wide engine lock (`--lock`). The last line printed is one
JSON object: suite_max_err, vllm_max_err, suite_vs_vllm_max_diff (--calibrated), suite_ceiling_events_s,
vllm_ceiling_events_s (--ceiling), pacing (--pacing: one row per rate), and the machine's load average
at the start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict
from pathlib import Path

from ..load import ENGINE_LOCK, engine_lock, say_on_stderr
from ._calibrated import CalibratedCase, measure_case, summary, table
from ._source import MODEL, Schedule, source_process
from ._vllm import VllmBench, engine_python_default


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m llmval bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--calibrated", action="store_true", help="measure the calibration source with both tools")
    parser.add_argument("--ceiling", action="store_true", help="find each tool's event-rate ceiling")
    parser.add_argument("--ceiling-ladder", choices=("cpu", "gpu"), default="cpu",
                        help="--ceiling: cpu (C=16..64, 400..6400 events/s, one source process) or gpu (C=256, "
                             "16k..96k events/s, the source over several processes)")
    parser.add_argument("--pacing", action="store_true",
                        help="open-loop pacing against the calibration source: achieved rate and schedule lag")
    parser.add_argument("--pacing-rates", type=float, nargs="+", default=[10, 100, 500, 1000])
    parser.add_argument("--pacing-seconds", type=float, default=3.0, help="seconds of arrivals per rate")
    parser.add_argument("--no-vllm", action="store_true", help="the suite only (no `vllm bench serve`)")
    parser.add_argument("--engine-python", type=Path, default=engine_python_default(),
                        help="python of the venv holding vLLM (default .venv-engine/bin/python)")
    parser.add_argument("--tokenizer", type=Path, default=Path(".cache/models/smollm2-135m-instruct"),
                        help="tokenizer for `vllm bench serve`'s random prompts (local path)")
    parser.add_argument("--ttft-ms", type=float, default=1000.0, help="calibration source TTFT (default 1000)")
    parser.add_argument("--interval-ms", type=float, default=25.0, help="calibration source chunk interval")
    parser.add_argument("--tokens-per-chunk", type=int, default=3, help="tokens per decode chunk (default 3)")
    parser.add_argument("--output-len", type=int, default=61, help="output tokens per request (default 61)")
    parser.add_argument("--input-len", type=int, default=32)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--c1-requests", type=int, default=8)
    parser.add_argument("--requests-per-concurrency", type=int, default=1,
                        help="k in k·C requests (C>1; default 1: one wave after a warmup wave)")
    parser.add_argument("--suite-workers", type=int, default=1,
                        help="--calibrated: the suite's generator over N processes at C>1 (default 1, as the gates)")
    parser.add_argument("--lock", type=Path, default=ENGINE_LOCK)
    parser.add_argument("--lock-timeout-s", type=float, default=900)
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    return parser


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    argv = list(argv or [])
    if "--agentic" in argv:
        from ._agentic import main as agentic_main  # the owners' multi-turn agentic load: OUT/summary.json

        return agentic_main(argv)
    if "--correctness-under-load" in argv:
        from ._correctness import main as correctness_main  # idle vs under load: OUT/summary.json

        return correctness_main(argv)
    if "--side-by-side" in argv:
        from ._side_by_side import main as side_by_side_main  # both tools, ABBA, OUT/summary.json

        return side_by_side_main(argv)
    if "--engine-help" in argv:
        argv = ["--help"]
    elif not {"--calibrated", "--ceiling", "--pacing", "-h", "--help"} & set(argv):
        from ._engine_side_by_side import main as engine_main  # the local engine side by side

        return engine_main(argv)
    args = _parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    line: dict = {"load_start": _load()}
    bench = None if args.no_vllm else VllmBench(args.engine_python, args.out / f"vllm-bench-{stamp}.log")
    try:
        with engine_lock(args.lock, args.lock_timeout_s, say=say_on_stderr):
            started = time.monotonic()
            if args.calibrated:
                schedule = Schedule(ttft_s=args.ttft_ms / 1000, interval_s=args.interval_ms / 1000,
                                    tokens_per_chunk=args.tokens_per_chunk, output_len=args.output_len)
                cases = [CalibratedCase(c, args.c1_requests if c == 1 else args.requests_per_concurrency * c,
                                        warmups=1 if c == 1 else c) for c in args.concurrency]
                with source_process(schedule) as base_url:
                    results = [measure_case(base_url, schedule, case, bench=bench, tokenizer=args.tokenizer,
                                            input_len=args.input_len, output_len=args.output_len, out_dir=args.out,
                                            model=MODEL, suite_workers=args.suite_workers) for case in cases]
                print(f"calibration source: {asdict(schedule)}")
                print(table(results))
                line.update(summary(results))
                (args.out / f"calibrated-{stamp}.json").write_text(json.dumps(
                    {"schedule": asdict(schedule), "cases": [{"case": asdict(r.case), "truth": r.truth,
                                                              "suite": r.suite, "vllm": r.vllm} for r in results]},
                    indent=1), encoding="utf-8")
            if args.ceiling:
                from ._ceiling import ceilings

                line.update(ceilings(bench, args, stamp))
            if args.pacing:
                from ._pacing import pacing

                line.update(pacing(bench, args, stamp))
            line["wall_s"] = round(time.monotonic() - started, 1)
    finally:
        if bench is not None:
            bench.close()
    line["load_end"] = _load()
    print(json.dumps(line))
    return 0
