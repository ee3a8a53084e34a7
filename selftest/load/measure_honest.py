"""Measure what issue 24.6 asks for on this machine: the real local engine's perf runs beside this machine's
calibration and the client host's load, on all CPUs or fewer (a slower machine, simulated by restricting the
engine's CPU affinity: `taskset -c` and `VLLM_CPU_OMP_THREADS_BIND`), quiet or kept busy by CPU burners that the
suite did not start. One JSON line per condition; the runs' JSON files under `--out`. `--baseline save` stores the
runs as baselines (`--out/baselines`, with the calibration), `--baseline compare` adds each run's comparison with
them (the perf.baseline verdict's expected / observed / hint) to the row.

    python -m selftest.load.measure_honest --cpus 0-1 --out /tmp/m            # this box as it is
    python -m selftest.load.measure_honest --cpus 0 --out /tmp/m              # a 1-CPU machine
    python -m selftest.load.measure_honest --cpus 0-1 --burners 2 --out /tmp/m
    python -m selftest.load.measure_honest --cpus 0-1 --baseline save --out /tmp/m      # then, on the same --out:
    python -m selftest.load.measure_honest --cpus 0 --baseline compare --out /tmp/m     # the baselines, scaled

It holds /tmp/llmval-engine.lock (the one-extra-engine lock) while its engine is up, starts the engine with the
suite's own launcher on port 8351 (`--port`), and judges nothing: the busy rule is reported, the runs are always kept
(`judge_host_load=False`).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import time
import tomllib
from pathlib import Path

import tomli_w

from llmval.inventory import load_inventory
from llmval.io.transport import connect
from llmval.launch import Stack
from llmval.load import BaselineStore, PerfSession
from selftest.engine import ENGINE_LOCK, engine_inventory
from selftest.load.burners import orphan_burners, stop

PORT = 8351


def restricted_inventory(folder: Path, cpus: str, port: int = PORT) -> Path:
    """local.toml on PORT with the engine pinned to `cpus` (`0`, `0-1`); the section made machine-relative with
    reference 1.0 so that the calibration runs and is recorded (factor min(1, s/1) = 1: the gates unchanged)."""
    path = engine_inventory(folder, port)
    document = tomllib.loads(path.read_text())
    for step in document["launch"]["start"]:
        step["run"] = step["run"].replace("exec ", f"exec taskset -c {cpus} ", 1)
        step["env"]["VLLM_CPU_OMP_THREADS_BIND"] = cpus
    document["perf"][0]["machine"] = {"reference_steps_s": 1.0, "reference": "measure_honest: factor 1"}
    path.write_text(tomli_w.dumps(document))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", default="0-1")
    parser.add_argument("--burners", type=int, default=0, help="CPU burners running through the perf runs")
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 4])
    parser.add_argument("--sweep", action="store_true", help="also the section's request-rate sweep")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--baseline", choices=("save", "compare"), default=None,
                        help="store the runs as baselines, or compare them with those stored under --out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    folder = args.out / f"engine-cpus{args.cpus}"
    folder.mkdir(exist_ok=True)
    path = restricted_inventory(folder, args.cpus, args.port)
    inventory = load_inventory(path)
    spec = inventory.perf[0]
    with open(ENGINE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stack = Stack(inventory, lambda name: connect(inventory.host(name)), folder / "launch", say=print)
        try:
            started = time.monotonic()
            stack.launch()
            ready_s = time.monotonic() - started
            session = PerfSession(inventory, reports_dir=args.out / f"reports-cpus{args.cpus}-b{args.burners}",
                                  lock_path=args.out / "perf.lock", baselines=BaselineStore(args.out / "baselines"),
                                  progress=print, judge_host_load=False, save_baseline=args.baseline == "save")
            gates = session.gates(spec)  # calibrates before the burners start: the calibration wants a quiet host
            burners = orphan_burners(args.burners) if args.burners else []
            try:
                runs = {c: session.get(spec, c) for c in args.concurrency}
                points = session.sweep(spec) if args.sweep else []
            finally:
                stop(burners)
            row = {"cpus": args.cpus, "burners": args.burners, "ready_s": round(ready_s, 1),
                   "calibration": gates.calibration.as_json() if gates.calibration else None,
                   "runs": {f"c{c}": {"decode_tok_s": round(m.run.metrics.decode_tok_s, 2),
                                      "output_tok_s": round(m.run.metrics.output_throughput, 2),
                                      "ttft_p99_ms": round(m.run.metrics.ttft_ms.percentiles["p99"], 1),
                                      "client_host": m.host.as_json()} for c, m in runs.items()},
                   "sweep": [{**p.as_json(), "client_host": p.host.as_json() if p.host else None} for p in points]}
            if args.baseline == "compare":
                checks = {c: session.against_baseline(spec, m) for c, m in runs.items()}
                row["baseline"] = {f"c{c}": {"expected": k.expected, "observed": k.observed, "ok": k.is_ok,
                                             "hint": k.hint, "evidence": k.evidence, "skip": k.skip_reason}
                                   for c, k in checks.items()}
            row["baselines_saved"] = [str(p) for p in session.save_baselines()]
            print(json.dumps(row))
            (args.out / f"row-cpus{args.cpus}-b{args.burners}.json").write_text(json.dumps(row, indent=1) + "\n")
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
