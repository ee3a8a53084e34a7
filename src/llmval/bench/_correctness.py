"""`python -m llmval bench --correctness-under-load`: correctness under load against a running engine, no inventory.

Per concurrency C, one `llmval.underload.measure` (the tests' `perf.correctness.*` run): NIAH cells (lengths x
depths) and tool-call catalogue cases asked at temperature 0 idle, while C closed-loop streams of in/out tokens
hold the engine, and idle again; each probe judged and compared. Writes OUT/perf/bench-correctness-c<C>.json (every
probe's three answers, texts, windows) and OUT/summary.json (one row per C: probes, held, text changed, judged
changed, each gate's outcome, what broke), prints a table and, last, one JSON line (the rows).

    python -m llmval bench --correctness-under-load --base-url http://127.0.0.1:8000 --model smollm2 \\
        --concurrency 16 64 256 --niah-lengths 1024 4096 --tool-categories flat enum bigint nested --out OUT
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from ..core.errors import LlmvalError
from ..engines import ADAPTERS
from ..inventory import EndpointSpec, PerfSpec
from ..inventory.perf import TOOL_CATEGORIES
from ..load import ENGINE_LOCK
from ..underload import measure


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m llmval bench --correctness-under-load",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--correctness-under-load", action="store_true", help="this mode")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--engine", choices=sorted(ADAPTERS), default="vllm", help="the engine's adapter")
    parser.add_argument("--max-model-len", type=int, default=8192)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4], help="streams held (one run each)")
    parser.add_argument("--input-len", type=int, default=128, help="load: prompt tokens per request")
    parser.add_argument("--output-len", type=int, default=128, help="load: output tokens per request (EOS ignored)")
    parser.add_argument("--niah-lengths", type=int, nargs="*", default=[1024])
    parser.add_argument("--niah-depths", type=float, nargs="*", default=[0.0, 0.5, 1.0], help="none: no NIAH probe")
    parser.add_argument("--tool-categories", nargs="*", choices=TOOL_CATEGORIES, default=["flat", "enum", "bigint"])
    parser.add_argument("--tool-cases-per-category", type=int, default=1)
    parser.add_argument("--tool-variant", choices=("strict", "free"), default="strict")
    parser.add_argument("--tool-choice", choices=("auto", "required", "named"), default="required")
    parser.add_argument("--compare", choices=("judged", "text"), default="judged")
    parser.add_argument("--no-repeat-idle", action="store_true", help="skip the idle pass after the load")
    parser.add_argument("--hold-timeout-s", type=float, default=120)
    parser.add_argument("--timeout-s", type=float, default=300, help="one request's timeout")
    parser.add_argument("--lock", type=Path, default=ENGINE_LOCK)
    parser.add_argument("--lock-timeout-s", type=float, default=900)
    parser.add_argument("--out", type=Path, default=Path("reports/bench/correctness"))
    return parser


def _row(concurrency: int, run) -> dict:
    gates = run.gates()
    return {"concurrency": concurrency, **run.summary(), "phases_s": {k: round(v, 1) for k, v in run.phases_s.items()},
            "load": {"requests": run.load_requests, "failed": run.load_failed, "output_tokens": run.load_tokens},
            "broken": {g.check: g.observed for g in gates if g.outcome == "broken"},
            "could_not_check": {g.check: g.observed for g in gates if g.outcome == "could_not_check"},
            "changed_texts": [s.probe_id for s in run.samples if s.is_text_changed], "report": str(run.report)}


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    endpoint = EndpointSpec(name="bench", platform="bench", base_url=args.base_url, engine=args.engine,
                            model=args.model, max_model_len=args.max_model_len, request_timeout_s=args.timeout_s,
                            tool_calls={"variants": [args.tool_variant], "tool_choice": args.tool_choice})
    rows, started = [], time.monotonic()
    for concurrency in args.concurrency:
        perf = PerfSpec(endpoint="bench", name="bench", input_len=args.input_len, output_len=args.output_len,
                        correctness={"concurrency": concurrency, "niah_lengths": args.niah_lengths,
                                     "niah_depths": args.niah_depths, "tool_categories": args.tool_categories,
                                     "tool_cases_per_category": args.tool_cases_per_category,
                                     "compare": args.compare, "repeat_idle": not args.no_repeat_idle,
                                     "hold_timeout_s": args.hold_timeout_s})
        began = time.monotonic()
        try:
            run = measure(endpoint, perf, lock_path=args.lock, reports_dir=args.out, lock_timeout_s=args.lock_timeout_s,
                          say=lambda line: print(line, flush=True))
            rows.append(_row(concurrency, run))
        except LlmvalError as error:  # a run that could not be made is a row that says why, and the next C still runs
            rows.append({"concurrency": concurrency, "error": f"{type(error).__name__}: {error}",
                         "wall_s": round(time.monotonic() - began, 1)})
        print(json.dumps(rows[-1], ensure_ascii=False)[:3000], flush=True)
    summary = {"rows": rows, "wall_s": round(time.monotonic() - started, 1), "load_end": list(os.getloadavg()),
               "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{'C':>5} {'probes':>6} {'held':>5} {'text chg':>8} {'(idle too)':>10} {'judged chg':>10}  outcomes")
    for row in rows:
        if "error" in row:
            print(f"{row['concurrency']:>5}  {row['error'][:200]}")
        else:
            print(f"{row['concurrency']:>5} {row['probes']:>6} {row['held']:>5} {row['text_changed']:>8} "
                  f"{row['text_changed_idle_too']:>10} {row['judged_changed']:>10}  {row['outcomes']}")
    print(json.dumps({"correctness_under_load": [{k: r.get(k) for k in ("concurrency", "probes", "held", "text_changed",
                                                                        "text_changed_idle_too", "judged_changed",
                                                                        "outcomes", "error")}
                                                 for r in rows]}))
    return 0
