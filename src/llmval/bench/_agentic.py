"""`python -m llmval bench --agentic`: the owners' multi-turn agentic load against a running engine.

Per concurrency, one run of `llmval.load._agentic` (sessions of seeded agent transcripts whose context grows turn
by turn on a shared prefix, streamed over the wire client, the engine's /metrics sampled through the window):
TTFT against context length and per turn, the prefix-cache hit rate from the engine's own counters, goodput under
`--ttft-ms`/`--tpot-ms`. Writes OUT/agentic-c<C>.json (every turn), OUT/summary.json (one row per C), OUT/agentic.png;
prints a table and, last, one JSON line (the summary rows).

    python -m llmval bench --agentic --base-url http://127.0.0.1:8000 --model smollm2 --sessions 32 --turns 10 \\
        --concurrency 8 32 --output-len 32 --ttft-ms 500 --tpot-ms 50 --out OUT
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from ..engines import ADAPTERS, adapter_class
from ..io.http import make_async_client
from ..load import (
    ENGINE_LOCK,
    AgenticProfile,
    AgenticRun,
    Slo,
    WireClient,
    engine_lock,
    plot_agentic,
    run_agentic,
    say_on_stderr,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m llmval bench --agentic", description=__doc__.split("\n\n")[0])
    parser.add_argument("--agentic", action="store_true", help="this mode")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--engine", choices=sorted(ADAPTERS), default="vllm",
                        help="the engine's adapter (its metric names)")
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4])
    parser.add_argument("--output-len", type=int, default=32)
    parser.add_argument("--think-s", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-context-tokens", type=int, default=None)
    parser.add_argument("--no-tools", action="store_true", help="send no tool definitions")
    parser.add_argument("--ttft-ms", type=float, default=None, help="goodput SLO: TTFT")
    parser.add_argument("--tpot-ms", type=float, default=None, help="goodput SLO: TPOT")
    parser.add_argument("--metrics-interval-s", type=float, default=1.0)
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--lock", type=Path, default=ENGINE_LOCK)
    parser.add_argument("--lock-timeout-s", type=float, default=900)
    parser.add_argument("--out", type=Path, default=Path("reports/bench/agentic"))
    return parser


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def summary_row(run: AgenticRun, slo: Slo) -> dict:
    body = run.as_json(slo)
    has_slo = slo.ttft_ms is not None or slo.tpot_ms is not None
    samples = (body["engine_samples"] or {}).get("summary", {})
    return {"concurrency": run.profile.concurrency, "sessions": body["sessions"], "turns_sent": body["turns_sent"],
            "failed": body["failed"], "max_prompt_tokens": body["max_prompt_tokens"],
            "prefix_cache_hit_rate": run.prefix_cache_share()[0], "prefix_cache": run.prefix_cache_share()[1],
            "reusable_share": body["reusable_share"], "ttft_ms": body["ttft_ms"], "tpot_ms": body["tpot_ms"],
            "output_tok_s": body["output_throughput"], "goodput_share": body["goodput"]["share"] if has_slo else None,
            "by_context": [{"context_tokens": r["context_tokens"], "turns": r["turns"],
                            "ttft_p50_ms": r["ttft_ms"]["median"], "ttft_p90_ms": r["ttft_ms"]["p90"]}
                           for r in body["by_context"]],
            "engine": {k: samples.get(k) for k in ("waiting_max", "running_max", "kv_cache_usage_max", "preemptions")},
            "duration_s": body["duration_s"]}


def table(rows: list[dict]) -> str:
    lines = ["| C | sessions | turns | failed | max prompt | prefix hits | reusable | TTFT p50 / p99 ms | "
             "output tok/s | goodput | waiting max | KV max | preemptions |", "|" + "---|" * 13]
    for r in rows:
        hits = f"{r['prefix_cache_hit_rate']:.1%}" if r["prefix_cache_hit_rate"] is not None else "-"
        kv = r["engine"]["kv_cache_usage_max"]
        good = "-" if r["goodput_share"] is None else f"{r['goodput_share']:.1%}"
        lines.append(f"| {r['concurrency']} | {r['sessions']} | {r['turns_sent']} | {r['failed']} | "
                     f"{r['max_prompt_tokens']} | {hits} | {r['reusable_share']} | {r['ttft_ms']['median']} / "
                     f"{r['ttft_ms']['p99']} | {r['output_tok_s']} | {good} | "
                     f"{r['engine']['waiting_max']} | {'-' if kv is None else f'{kv:.1%}'} | "
                     f"{r['engine']['preemptions']} |")
    for r in rows:
        lines.append(f"C={r['concurrency']} TTFT p50 by prompt tokens: " + "; ".join(
            f"{b['context_tokens']}: {b['ttft_p50_ms']} ms (n={b['turns']})" for b in r["by_context"]))
    return "\n".join(lines)


async def _run(args: argparse.Namespace, concurrency: int) -> AgenticRun:
    profile = AgenticProfile(model=args.model, sessions=args.sessions, turns=args.turns, concurrency=concurrency,
                             output_len=args.output_len, think_s=args.think_s, seed=args.seed,
                             tools=not args.no_tools, max_context_tokens=args.max_context_tokens)
    engine = adapter_class(args.engine)
    async with make_async_client(args.base_url, timeout_s=30) as client, \
            WireClient(args.base_url, timeout_s=args.timeout_s) as streamer:
        return await run_agentic(client, streamer, profile, endpoint=args.base_url, engine=engine,
                                 sample_interval_s=args.metrics_interval_s)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    slo = Slo(ttft_ms=args.ttft_ms, tpot_ms=args.tpot_ms)
    rows, runs = [], []
    load_start = [round(x, 2) for x in os.getloadavg()]
    started = time.monotonic()
    with engine_lock(args.lock, args.lock_timeout_s, say=say_on_stderr):
        for c in args.concurrency:
            cpu = _cpu_s()
            run = asyncio.run(_run(args, c))
            cpu = _cpu_s() - cpu  # the suite's own CPU over the run (warmup and counters included)
            runs.append(run)
            (args.out / f"agentic-c{c}.json").write_text(json.dumps(run.as_json(slo), indent=1, default=str) + "\n",
                                                         encoding="utf-8")
            rows.append({**summary_row(run, slo), "client_cpu_s": round(cpu, 2),
                         "client_cores_busy": round(cpu / run.duration_s, 3) if run.duration_s > 0 else None})
            print(f"agentic C={c}: {len(run.turns)} turns in {run.duration_s:.1f} s, failed {len(run.failed)}, "
                  f"prefix hits {rows[-1]['prefix_cache_hit_rate']}", flush=True)
            summary = {"rows": rows, "slo": slo.describe(), "base_url": args.base_url, "model": args.model,
                       "engine": args.engine, "load_start": load_start,
                       "load_end": [round(x, 2) for x in os.getloadavg()],
                       "wall_s": round(time.monotonic() - started, 1)}
            (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    try:
        plot_agentic(runs, args.out / "agentic.png", title=f"agentic load, {args.model} at {args.base_url}", slo=slo)
    except ImportError as error:  # a bare GPU image: the numbers are in the JSON, only the picture is missing
        print(f"agentic.png not drawn: {error}")
    print(table(rows))
    print(json.dumps({"agentic": rows, "wall_s": round(time.monotonic() - started, 1)}))
    return 0 if all(r["failed"] == 0 for r in rows) else 1
