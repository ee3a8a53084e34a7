"""`python -m llmval bench --side-by-side`: the suite's load generator and `vllm bench serve`, same engine, same
prompts, ABBA, at fixed concurrencies and at Poisson rates up to the engine's knee; `OUT/summary.json`.

Each point (a concurrency C, or a request rate R) is measured in rounds; a round runs both tools one after
the other, the order alternating (vLLM, suite; then suite, vLLM: ABBA), so an engine that drifts during the
run does not show up as a difference between the tools. Per round and metric the ratio suite/vLLM is taken;
the summary row gives both tools' mean over the rounds, the geometric mean of the per-round ratios and its
95 % confidence interval (Student t on the log ratios, `ratio_ci95`).

Workload, both tools: /v1/completions, streamed, `input_len` prompt tokens (the suite's prompts, exact by
the server's /tokenize; vLLM reads the same kind of prompts, each run fresh ones, from a JSONL through
`--dataset-name custom --skip-chat-template`, or its random dataset where its `bench serve` lacks those
options), `output_len` tokens with ignore_eos, temperature 0. At C: k·C requests after C warmups (vLLM:
`--num-warmups C`), rate inf, `--max-concurrency C`. At R: about `rate_seconds` of arrivals (R·s requests)
drawn as vLLM draws them (gamma gaps, burstiness 1, rescaled to end at N/R), capped at `rate_cap` in flight.
The rates are fractions of the request throughput that vLLM's client measured at the largest C (the
engine's closed-loop ceiling), unless given.

The suite's generator runs over worker processes (`llmval.load._parallel`: one event loop and one
`WireClient` per worker, `auto_workers(C)` of them) so its own CPU is never what is measured. Every run
records the client's CPU seconds (the suite's workers; `vllm bench serve`'s worker process), the engine's
(its process tree on this host), the machine's other CPU, the host's load average and steal, and other
traffic the engine counted in the window. A time budget (`--budget-s`) bounds the whole: every point gets
two rounds first, then more rounds round-robin while the budget's estimate allows; `summary.json` is
rewritten after every round, so a run cut short still leaves its rows.

With `--calibration-source` the same rounds measure the calibration source (`llmval.bench._source`, several
processes on one port) instead of an engine: each point is served with the TTFT p50 and TPOT p50 that an engine side
by side measured there (`--source-like` its summary.json), so both tools meet the same concurrency, event rate and
latencies with the truth known exactly (`Schedule.truth`, `Schedule.rate_truth`), and every row adds each tool's
value over the truth. Where the engine's ratio is not shown within 2 %, this says which tool, if either, is wrong.
`--run-seconds` lengthens the windows at the concurrencies (rounds after the first size their requests by the last
round's rate).

    python -m llmval bench --side-by-side --base-url http://127.0.0.1:8000 --model smollm2 \\
        --tokenizer /tmp/model --engine-python python3 --out OUT --concurrency 1 16 64 256 --budget-s 400
    python -m llmval bench --side-by-side --calibration-source --source-like OUT/summary.json --out OUT-source \\
        --tokenizer /tmp/model --engine-python python3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import secrets
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core.errors import EndpointError, ParseError
from ..core.files import read_regular_text
from ..core.jsontext import read_json
from ..engines import VllmAdapter
from ..io.answers import parse_json
from ..io.http import httpx_errors, make_async_client
from ..load import (
    ENGINE_LOCK,
    WordPrompts,
    Workload,
    auto_workers,
    build_prompts,
    engine_lock,
    read_counters,
    run_load_parallel,
    say_on_stderr,
    vllm_offsets,
    window_deltas,
)
from ._engine_side_by_side import MachineCpu, ratio_ci95
from ._source import MODEL, Schedule, SourceFleet, Truth
from ._vllm import VllmBench, VllmRun

METRICS = ("output_tok_s", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms")
_VLLM_KEYS = {"output_tok_s": "output_throughput", "ttft_p50_ms": "median_ttft_ms", "ttft_p99_ms": "p99_ttft_ms",
              "tpot_p50_ms": "median_tpot_ms"}
RATE_FRACTIONS = (0.25, 0.5, 0.75, 0.9)


@dataclass
class Point:
    kind: str  # "concurrency" | "rate"
    value: float
    rounds: list[dict] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    """Wall time of each round (the budget's estimate)."""
    schedule: Schedule | None = None
    """Against the calibration source: the schedule it serves at this point (the engine's timing there)."""

    @property
    def label(self) -> str:
        return f"c{self.value:g}" if self.kind == "concurrency" else f"r{self.value:g}"


def _suite_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llmval")
    except PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).parent).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _host_sample() -> dict:
    cpu = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return {"load": os.getloadavg(), "steal": cpu[7] if len(cpu) > 7 else 0, "total": sum(cpu)}


def _steal_share(before: dict, after: dict) -> float:
    total = after["total"] - before["total"]
    return (after["steal"] - before["steal"]) / total if total > 0 else 0.0


def _vllm_events(result: dict) -> int:
    return sum(len(itl) + 1 for itl, ok in zip(result.get("itls", []), _ok(result), strict=False) if ok)


def _ok(result: dict) -> list[bool]:
    errors = result.get("errors") or [""] * len(result.get("itls", []))
    return [not e for e in errors]


def _microseconds(result: dict) -> dict:
    """The per-request lists with times rounded to the µs (raw files a third the size; metrics are in ms)."""
    def walk(value):
        if isinstance(value, float):
            return round(value, 6)
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return {k: walk(v) if isinstance(v, list) else v for k, v in result.items()}


def _metrics_of(result: dict) -> dict[str, float]:
    return {m: float(result[_VLLM_KEYS[m]]) for m in METRICS}


def truth_metrics(truth: Truth) -> dict[str, float]:
    """The four compared metrics as a perfect client measures them (every request alike: p99 TTFT = TTFT)."""
    return {"output_tok_s": truth.output_throughput, "ttft_p50_ms": truth.ttft_ms, "ttft_p99_ms": truth.ttft_ms,
            "tpot_p50_ms": truth.tpot_ms}


def _point_of(row: dict) -> tuple[str, float]:
    """The (kind, value) point a summary row belongs to: ("concurrency", 64.0) or ("rate", 30.0)."""
    kind = "concurrency" if "concurrency" in row else "rate"
    return kind, float(row[kind])


def engine_like_schedules(rows: list[dict], output_len: int) -> dict[tuple[str, float], Schedule]:
    """Per point of an engine side by side (the rows of its `summary.json`): a source schedule with the engine's
    timing there (TTFT = the two tools' mean TTFT p50, one token per chunk every mean TPOT p50), so each tool meets
    the same concurrency, event rate and latencies as on the engine, with the truth known."""
    by_point: dict[tuple[str, float], dict[str, float]] = {}
    for row in rows:
        by_point.setdefault(_point_of(row), {})[row["metric"]] = (row["suite"] + row["vllm"]) / 2
    return {point: Schedule(ttft_s=m["ttft_p50_ms"] / 1000, interval_s=m["tpot_p50_ms"] / 1000, output_len=output_len)
            for point, m in by_point.items() if m.get("ttft_p50_ms") and m.get("tpot_p50_ms")}


class SideBySide:
    """One session: the vLLM bench worker, the prompt maker, the engine's processes, the points measured."""

    def __init__(self, args: argparse.Namespace, fleet: SourceFleet | None = None):
        self.args = args
        self.fleet = fleet
        """The calibration source every run measures instead of an engine (None: the engine at --base-url)."""
        self.out: Path = args.out
        self.raw = self.out / "raw"
        self.raw.mkdir(parents=True, exist_ok=True)
        self.started = time.monotonic()
        port = int(args.base_url.rsplit(":", 1)[1].split("/")[0])
        self.machine = MachineCpu(port)
        self.bench = VllmBench(args.engine_python, self.out / "vllm-bench.log")
        self.prompts, self.engine_info = asyncio.run(self._prepare())
        self.points: list[Point] = []
        self.notes: list[str] = []
        self.schedules: dict[tuple[str, float], Schedule] = {}
        """Against the calibration source: the schedule of each (kind, value) point (`engine_like_schedules`)."""

    def close(self) -> None:
        self.bench.close()

    # --- engine
    async def _prepare(self) -> tuple[WordPrompts, dict]:
        args = self.args
        async with make_async_client(args.base_url, timeout_s=30) as client:
            maker = await WordPrompts.create(client, model=args.model, input_len=args.input_len,
                                             endpoint="side-by-side")
            info: dict = {"base_url": args.base_url, "model": args.model, "processes_on_host": len(self.machine.engine)}
            for path in ("/version", "/v1/models"):
                try:
                    with httpx_errors():
                        answer = await client.get(path)
                    info[path] = parse_json(answer.text, f"GET {path}") if answer.status_code == 200 else \
                        f"HTTP {answer.status_code}"
                except EndpointError as error:
                    info[path] = f"{error.kind}: {error.detail}" if error.kind else str(error)
        info["prompts_exact_by_tokenize"] = maker.exact
        return maker, info

    async def _counters(self):
        async with make_async_client(self.args.base_url, timeout_s=30) as client:
            return await read_counters(client, "side-by-side", VllmAdapter)

    async def _prompt_texts(self, nonce: str, count: int) -> list[str]:
        if self.prompts.exact:
            return self.prompts.texts(nonce, count)
        async with make_async_client(self.args.base_url, timeout_s=30) as client:
            return [p.text for p in await build_prompts(client, model=self.args.model, input_len=self.args.input_len,
                                                        nonce=nonce, count=count, endpoint="side-by-side")]

    # --- one run of one tool
    def _shape(self, point: Point) -> tuple[int, int, int | None, float | None]:
        """(requests, warmups, max concurrency, rate) of a run at `point`."""
        args = self.args
        if point.kind == "concurrency":
            c = int(point.value)
            n = args.c1_requests if c == 1 else args.requests_per_concurrency * c
            if args.run_seconds and point.rounds:  # long enough windows: requests for run_seconds at the last rate
                last = point.rounds[-1]
                per_s = statistics.fmean(last[t]["completed"] / last[t]["duration_s"] for t in ("suite", "vllm"))
                n = max(n, c * math.ceil(args.run_seconds * per_s / c))
            return n, (args.warmups if c == 1 else c), c, None
        n = max(args.rate_min_requests, round(point.value * args.rate_seconds))
        return n, args.rate_warmups, args.rate_cap, point.value

    def run_tool(self, tool: str, point: Point, round_no: int) -> dict:
        args = self.args
        n, warmups, cap, rate = self._shape(point)
        seed = secrets.randbelow(2**31)
        nonce = f"{tool[0]}{seed:x}"
        texts = asyncio.run(self._prompt_texts(nonce, n + warmups))
        before = asyncio.run(self._counters())
        if self.fleet is not None:  # the point's schedule, and the source's lateness counted from here
            self.fleet.set_schedule(point.schedule or self.fleet.schedule)
        host0, cpu0, t0 = _host_sample(), self.machine.snapshot(self.bench.proc.pid), time.monotonic()
        name = f"{tool}-{point.label}-round{round_no}"
        if tool == "vllm":
            dataset = self.raw / f"{name}-prompts.jsonl"
            # vLLM warms up with copies of request #0; the warmup prompts are the suite's only
            dataset.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts[warmups:]), encoding="utf-8")
            run = VllmRun(base_url=args.base_url, model=args.model, tokenizer=args.tokenizer,
                          input_len=args.input_len, output_len=args.output_len, concurrency=cap or n,
                          num_prompts=n, warmups=warmups, seed=seed, temperature=args.temperature,
                          request_rate=rate, dataset_path=dataset, max_concurrency=cap)
            result = self.bench.run(run, self.raw, f"{name}.json")
            result.pop("generated_texts", None)
            (self.raw / f"{name}.json").write_text(json.dumps(_microseconds(result)) + "\n", encoding="utf-8")
            dataset.unlink()
            cpu1 = self.machine.snapshot(self.bench.proc.pid)
            client_cpu = (cpu1[2] - cpu0[2]) / os.sysconf("SC_CLK_TCK")
            prompts = "suite-words" if run.uses_custom_dataset(self.bench.options) else "vllm-random"
            own = result["total_output_tokens"] + warmups * args.output_len
            events, workers = _vllm_events(result), 1
        else:
            workload = Workload(model=args.model, input_len=args.input_len, output_len=args.output_len,
                                concurrency=cap or n, num_requests=n, warmup_requests=warmups,
                                temperature=args.temperature, ignore_eos=True, request_rate=rate)
            offsets = vllm_offsets(n, rate, seed) if rate is not None else None
            workers = args.suite_workers or auto_workers(min(cap or n, n) if rate is None
                                                          else min(cap or n, int(max(point.value, 1) * 4)))
            load, cpu = run_load_parallel(args.base_url, workload, workers=workers, prompts=texts,
                                          endpoint="side-by-side", timeout_s=args.timeout_s, offsets=offsets)
            cpu1 = self.machine.snapshot(self.bench.proc.pid)
            result = {**load.as_json(), "client_cpu": cpu.as_json()}
            raw = {**result, "itls": [r.itl_s for r in load.records]}
            (self.raw / f"{name}.json").write_text(json.dumps(_microseconds(raw), default=str) + "\n",
                                                   encoding="utf-8")
            client_cpu, prompts = cpu.total_s, "suite-words"
            own = sum(x or 0 for x in result["output_lens"]) + warmups * args.output_len
            events = sum(r.chunks for r in load.records if r.success)
        wall = time.monotonic() - t0
        after = asyncio.run(self._counters())
        host1 = _host_sample()
        busy, engine = (cpu1[0] - cpu0[0]) / os.sysconf("SC_CLK_TCK"), (cpu1[1] - cpu0[1]) / os.sysconf("SC_CLK_TCK")
        generated = window_deltas(before, after).generation_tokens
        truth: dict = {}
        if self.fleet is not None:
            schedule = self.fleet.schedule
            exact = (schedule.truth(output_len=args.output_len, concurrency=cap or n, num_requests=n) if rate is None
                     else schedule.rate_truth(output_len=args.output_len, num_requests=n, rate=rate))
            truth = {"truth": {m: round(v, 5) for m, v in truth_metrics(exact).items()},
                     "source": {"schedule": {"ttft_ms": round(schedule.ttft_s * 1000, 3),
                                             "interval_ms": round(schedule.interval_s * 1000, 3)},
                                **self.fleet.lateness()}}
        return {
            "tool": tool, "round": round_no, **_metrics_of(result), "completed": result["completed"],
            "failed": result["failed"], "duration_s": result["duration"], "total_input_tokens":
                result["total_input_tokens"], "total_output_tokens": result["total_output_tokens"],
            "num_prompts": n, "warmups": warmups, "max_concurrency": cap, "request_rate": rate, "prompts": prompts,
            "client_cpu_s": round(client_cpu, 3), "client_workers": workers, "events": events,
            "client_cpu_us_per_event": round(client_cpu / events * 1e6, 2) if events else None,
            "engine_cpu_s": round(engine, 3), "other_cpu_cores": round(max(0.0, busy - engine - client_cpu) / wall, 3),
            "load_avg": [round(x, 2) for x in host1["load"]], "steal_share": round(_steal_share(host0, host1), 4),
            "foreign_tokens": None if generated is None else generated - own, "wall_s": round(wall, 2),
            "raw": f"raw/{name}.json", **truth,
        }

    # --- rounds and the summary
    def run_round(self, point: Point) -> None:
        round_no = len(point.rounds)
        order = ("vllm", "suite") if round_no % 2 == 0 else ("suite", "vllm")
        t0 = time.monotonic()
        results = {tool: self.run_tool(tool, point, round_no) for tool in order}
        point.rounds.append({"order": list(order), **results})
        point.seconds.append(time.monotonic() - t0)
        s, v = results["suite"], results["vllm"]
        print(f"{point.kind} {point.value:g} round {round_no + 1} ({'/'.join(order)}): "
              + ", ".join(f"{m} {s[m]:.1f}/{v[m]:.1f}" for m in METRICS)
              + f"; client CPU s {s['client_cpu_s']:.2f}/{v['client_cpu_s']:.2f} (suite/vllm); "
              f"{point.seconds[-1]:.1f} s", flush=True)
        self.write_summary()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def estimate(self, point: Point) -> float:
        if point.seconds:
            return max(point.seconds)
        known = [max(p.seconds) for p in self.points if p.seconds]
        return max(known) if known else 30.0

    def rows(self) -> list[dict]:
        rows = []
        for point in self.points:
            rounds = [r for r in point.rounds if r["suite"]["failed"] == 0 and r["vllm"]["failed"] == 0]
            if not rounds:
                continue
            for metric in METRICS:
                suite = [r["suite"][metric] for r in rounds]
                vllm = [r["vllm"][metric] for r in rounds]
                per_round = [a / b for a, b in zip(suite, vllm, strict=True) if b > 0 and a > 0]
                if not per_round:
                    continue
                mean, low, high = ratio_ci95(per_round)
                row = {point.kind: point.value, "metric": metric, "suite": round(statistics.fmean(suite), 4),
                       "vllm": round(statistics.fmean(vllm), 4), "ratio": round(mean, 5),
                       "ci95": [round(low, 5), round(high, 5) if high != float("inf") else None],
                       "rounds": len(per_round), "per_round": [round(x, 5) for x in per_round],
                       "within_2pct": low >= 0.98 and high <= 1.02}
                if all("truth" in r["suite"] for r in rounds):
                    row.update(_against_truth(rounds, metric))
                rows.append(row)
        return rows

    def client_cpu(self) -> dict:
        out = {}
        for point in self.points:
            if not point.rounds:
                continue
            entry = {}
            for tool in ("suite", "vllm"):
                runs = [r[tool] for r in point.rounds]
                cpu = sum(r["client_cpu_s"] for r in runs)
                events = sum(r["events"] for r in runs)
                wall = sum(r["duration_s"] for r in runs)
                entry[tool] = {"cpu_s_per_run": round(cpu / len(runs), 3), "workers": runs[-1]["client_workers"],
                               "us_per_event": round(cpu / events * 1e6, 2) if events else None,
                               "events_per_s": round(events / wall) if wall else None,
                               "cores_busy": round(cpu / wall, 3) if wall else None}
            out[point.label] = entry
        return out

    def write_summary(self) -> Path:
        args = self.args
        host = {"cpu_count": os.cpu_count(), "load_avg_now": [round(x, 2) for x in os.getloadavg()],
                "max_other_cpu_cores": max((r[t]["other_cpu_cores"] for p in self.points for r in p.rounds
                                            for t in ("suite", "vllm")), default=None),
                "max_steal_share": max((r[t]["steal_share"] for p in self.points for r in p.rounds
                                        for t in ("suite", "vllm")), default=None),
                "foreign_tokens_max": max((r[t]["foreign_tokens"] or 0 for p in self.points for r in p.rounds
                                           for t in ("suite", "vllm")), default=None)}
        body = {
            "rows": self.rows(),
            "engine": {**self.engine_info,
                       "engine_cpu_s_per_run": {p.label: round(statistics.fmean(
                           r[t]["engine_cpu_s"] for r in p.rounds for t in ("suite", "vllm")), 3)
                           for p in self.points if p.rounds}},
            "client_cpu": self.client_cpu(),
            "host": host,
            "versions": {"llmval": _suite_version(), "git_commit": _git_commit(),
                         "vllm_bench_serve": self.bench.version,
                         "python": sys.version.split()[0], "platform": platform.platform()},
            "workload": {"input_len": args.input_len, "output_len": args.output_len, "temperature": args.temperature,
                         "ignore_eos": True, "endpoint": "/v1/completions", "c1_requests": args.c1_requests,
                         "requests_per_concurrency": args.requests_per_concurrency, "rate_seconds": args.rate_seconds,
                         "rate_cap": args.rate_cap},
            "points": [{"kind": p.kind, "value": p.value, "round_seconds": [round(s, 1) for s in p.seconds],
                        "rounds": p.rounds} for p in self.points],
            "calibration_source": None if self.fleet is None else {
                "processes": self.fleet.processes, "cpus": sorted(self.fleet.cpus or []) or "any",
                "schedules": {p.label: asdict(p.schedule or self.fleet.schedule) for p in self.points},
                "source_like": [str(p) for p in args.source_like or []]},
            "notes": self.notes,
            "elapsed_s": round(self.elapsed(), 1),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        path = self.out / "summary.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(body, indent=1, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path


def _against_truth(rounds: list[dict], metric: str) -> dict:
    """Each tool's measurement over the truth, per round: the geometric mean, its 95 % CI and the largest error."""
    out: dict = {"truth": round(statistics.fmean(r["suite"]["truth"][metric] for r in rounds), 4)}
    for tool in ("suite", "vllm"):
        over = [r[tool][metric] / r[tool]["truth"][metric] for r in rounds if r[tool][metric] > 0]
        mean, low, high = ratio_ci95(over)
        out[f"{tool}_vs_truth"] = round(mean, 5)
        out[f"{tool}_vs_truth_ci95"] = [round(low, 5), round(high, 5) if high != float("inf") else None]
        out[f"{tool}_max_error"] = round(max(abs(x - 1) for x in over), 5)
    return out


def _where(row: dict) -> str:
    return f"C={row['concurrency']:g}" if "concurrency" in row else f"R={row['rate']:g}/s"


def attribute(engine_rows: list[dict], source_rows: list[dict], tolerance: float = 0.02) -> list[dict]:
    """Which tool, if either, is wrong where an engine's suite/vLLM ratio is not shown within `tolerance`.

    For each engine row, the source row of the same point and metric (measured with the engine's timing there):
    a tool is off when its value over the truth (geometric mean over the rounds) is more than `tolerance` from 1.
    The ratio the tools' own errors predict for the engine is suite/truth over vllm/truth; whether the engine's
    95 % CI holds it says if those errors explain what the engine showed. Off tools: the engine's ratio is their
    error. Neither off: the interval's width is the engine's own variation between rounds.
    """
    truth = {(_point_of(r), r["metric"]): r for r in source_rows if "truth" in r}
    out = []
    for row in (r for r in engine_rows if "ratio" in r and "ci95" in r):  # side-by-side rows, not timing-only ones
        entry = {"point": _where(row), "metric": row["metric"], "engine_ratio": row["ratio"],
                 "engine_ci95": row["ci95"], "engine_rounds": row["rounds"], "within": row["within_2pct"]}
        source = truth.get((_point_of(row), row["metric"]))
        if source is None:
            out.append({**entry, "off": None, "verdict": "no source row at this point: not attributed"})
            continue
        errors = {t: source[f"{t}_vs_truth"] - 1 for t in ("suite", "vllm")}
        off = [t for t, e in errors.items() if abs(e) > tolerance]
        predicted = source["suite_vs_truth"] / source["vllm_vs_truth"]
        low, high = row["ci95"][0], row["ci95"][1] if row["ci95"][1] is not None else math.inf
        entry |= {"truth": source["truth"], "suite_vs_truth": source["suite_vs_truth"],
                  "vllm_vs_truth": source["vllm_vs_truth"], "source_rounds": source["rounds"],
                  "predicted_ratio": round(predicted, 5), "predicted_inside_ci": low <= predicted <= high, "off": off}
        said = ", ".join(f"{'vLLM' if t == 'vllm' else 'the suite'} {errors[t]:+.1%}" for t in off)
        if row["within_2pct"]:
            verdict = f"shown within {tolerance:.0%}"
        elif off and entry["predicted_inside_ci"]:
            verdict = (f"{said} off the truth at this point; the ratio those errors predict ({predicted:.3f}) is "
                       "inside the engine's CI: the engine's ratio is consistent with them")
        elif off:
            verdict = (f"{said} off the truth at this point, but the ratio those errors predict ({predicted:.3f}) is "
                       "outside the engine's CI: the engine itself ran differently for the two tools")
        else:
            verdict = (f"both tools within {tolerance:.0%} of the truth (suite {errors['suite']:+.2%}, vLLM "
                       f"{errors['vllm']:+.2%}): the CI's width is the engine's variation between rounds")
        out.append({**entry, "verdict": verdict})
    return out


def print_attribution(entries: list[dict]) -> None:
    print(f"{'point':>9} {'metric':<13} {'engine ratio, 95 % CI':>27} {'suite/truth':>11} {'vllm/truth':>10} "
          f"{'predicted':>9}  verdict")
    for e in entries:
        hi = e["engine_ci95"][1]
        ci = f"{e['engine_ratio']:.3f} [{e['engine_ci95'][0]:.3f}, {'inf' if hi is None else f'{hi:.3f}'}]"
        if e["off"] is None:
            print(f"{e['point']:>9} {e['metric']:<13} {ci:>27} {'-':>11} {'-':>10} {'-':>9}  {e['verdict']}")
            continue
        print(f"{e['point']:>9} {e['metric']:<13} {ci:>27} {e['suite_vs_truth']:>11.4f} {e['vllm_vs_truth']:>10.4f} "
              f"{e['predicted_ratio']:>9.3f}  {e['verdict']}")


def knee_rates(point: Point, fractions: tuple[float, ...] = RATE_FRACTIONS) -> list[float]:
    """Request rates below the closed-loop ceiling measured at the largest concurrency (vLLM's client's
    completed req/s over its rounds, as `vllm bench serve` reports `request_throughput`)."""
    per_s = [r["vllm"]["completed"] / r["vllm"]["duration_s"] for r in point.rounds if r["vllm"]["duration_s"] > 0]
    ceiling = statistics.fmean(per_s)
    return [round(ceiling * f, 1 if ceiling * f < 10 else 0) for f in fractions]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m llmval bench --side-by-side", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--side-by-side", action="store_true")
    p.add_argument("--base-url", default="http://127.0.0.1:8321")
    p.add_argument("--model", default="smollm2")
    p.add_argument("--tokenizer", type=Path, default=Path(".cache/models/smollm2-135m-instruct"))
    p.add_argument("--engine-python", type=Path, default=Path(".venv-engine/bin/python"))
    p.add_argument("--input-len", type=int, default=128)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--concurrency", type=int, nargs="*", default=[1, 16, 64, 256])
    p.add_argument("--requests-per-concurrency", type=int, default=4, help="k in k·C requests (C>1)")
    p.add_argument("--c1-requests", type=int, default=16)
    p.add_argument("--warmups", type=int, default=2, help="warmups at C=1 (C warmups at C>1)")
    p.add_argument("--rates", default="auto",
                   help="request rates (req/s, comma-separated), 'auto' (fractions of the ceiling at the largest C), "
                        "or 'none'")
    p.add_argument("--rate-seconds", type=float, default=4.0, help="seconds of arrivals per rate run")
    p.add_argument("--rate-min-requests", type=int, default=32)
    p.add_argument("--rate-warmups", type=int, default=8)
    p.add_argument("--rate-cap", type=int, default=1024, help="max in flight in rate runs (both tools)")
    p.add_argument("--min-rounds", type=int, default=2)
    p.add_argument("--max-rounds", type=int, default=6)
    p.add_argument("--budget-s", type=float, default=900, help="stop adding rounds when the next would end later")
    p.add_argument("--suite-workers", type=int, default=0, help="worker processes of the suite (0: auto)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--timeout-s", type=float, default=600)
    p.add_argument("--lock", type=Path, default=ENGINE_LOCK)
    p.add_argument("--lock-timeout-s", type=float, default=900)
    p.add_argument("--run-seconds", type=float, default=0.0,
                   help="at a concurrency, rounds after the first send enough requests for about this many seconds "
                        "(at the previous round's rate; 0: always the k·C of --requests-per-concurrency)")
    p.add_argument("--calibration-source", action="store_true",
                   help="measure the calibration source (known truth) instead of an engine: rows add each tool's "
                        "value over the truth; the source runs here, --base-url and --model are ignored")
    p.add_argument("--source-like", type=Path, nargs="+",
                   help="--calibration-source: engine side by sides' summary.json files; each point is served with "
                        "that engine's TTFT p50 and TPOT p50 there, and their rates are measured (unless --rates)")
    p.add_argument("--source-ttft-ms", type=float, default=20.0, help="--calibration-source: TTFT of points that "
                   "--source-like does not name (default 20)")
    p.add_argument("--source-interval-ms", type=float, default=3.0, help="--calibration-source: chunk interval of "
                   "points that --source-like does not name (default 3)")
    p.add_argument("--source-processes", type=int, default=4,
                   help="--calibration-source: source processes on one port (SO_REUSEPORT; default 4)")
    p.add_argument("--source-cpus", type=_cpu_list,
                   help="--calibration-source: the CPUs its processes run on, e.g. 0-7 where the engine ran "
                        "(default: wherever this process may)")
    p.add_argument("--attribute", type=Path, metavar="SOURCE_SUMMARY",
                   help="measure nothing: attribute the rows of the engine summaries given with --source-like to the "
                        "tools' errors that this calibration-source summary.json measured (`attribute`)")
    p.add_argument("--out", type=Path, default=Path("reports") / "side-by-side")
    return p


def _read_rows(paths: list[Path]) -> list[dict]:
    rows = []
    for path in paths:
        try:
            rows += read_json(read_regular_text(path, 64 * 2**20), str(path), allow_nan=True)["rows"]
        except (OSError, ParseError, ValueError, KeyError, TypeError) as error:
            sys.exit(f"{path}: not a side by side's summary.json ({error})")
    return rows


def _cpu_list(text: str) -> set[int]:
    """`0-7,12` as taskset reads it.

    >>> sorted(_cpu_list("0-2,5"))
    [0, 1, 2, 5]
    """
    try:
        cpus = set()
        for part in text.split(","):
            low, _, high = part.partition("-")
            cpus |= set(range(int(low), int(high or low) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CPU list like 0-7,12: {text!r}") from None
    return cpus


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.attribute is not None:
        if not args.source_like:
            sys.exit("--attribute SOURCE_SUMMARY needs the engine summaries: --source-like ENGINE_SUMMARY ...")
        entries = attribute(_read_rows(args.source_like), _read_rows([args.attribute]))
        print_attribution(entries)
        print(json.dumps({"attribution": entries}))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    schedules: dict[tuple[str, float], Schedule] = {}
    engine_rows: list[dict] = []  # read once: the source's schedules now, the attribution after the run
    if args.source_like is not None:
        if not args.calibration_source:
            sys.exit("--source-like is for --calibration-source")
        engine_rows = _read_rows(args.source_like)
        try:
            schedules = engine_like_schedules(engine_rows, args.output_len)
        except (ValueError, KeyError, TypeError) as error:
            sys.exit(f"--source-like {' '.join(map(str, args.source_like))}: not an engine side by side's "
                     f"summary.json ({error})")
        if args.rates == "auto":
            args.rates = ",".join(f"{value:g}" for value in sorted(v for k, v in schedules if k == "rate")) or "none"
    with contextlib.ExitStack() as stack:
        stack.enter_context(engine_lock(args.lock, args.lock_timeout_s, say=say_on_stderr))
        fleet = None
        if args.calibration_source:
            default = Schedule(ttft_s=args.source_ttft_ms / 1000, interval_s=args.source_interval_ms / 1000,
                               output_len=args.output_len)
            fleet = stack.enter_context(SourceFleet(default, processes=args.source_processes, cpus=args.source_cpus))
            args.base_url, args.model = fleet.url, MODEL
        session = SideBySide(args, fleet)
        session.schedules = schedules
        try:
            _run(session, args)
        finally:
            session.write_summary()
            session.close()
    rows = session.rows()
    truth = " | suite/truth vllm/truth (largest error)" if rows and "truth" in rows[0] else ""
    print(f"{'point':>12} {'metric':<13} {'suite':>10} {'vllm':>10} {'ratio':>7} {'95 % CI':>17}  rounds{truth}")
    for row in rows:
        where, hi = _where(row), row["ci95"][1]
        against = (f" | {row['suite_vs_truth']:.4f} {row['vllm_vs_truth']:.4f} "
                   f"({row['suite_max_error']:.2%} / {row['vllm_max_error']:.2%})") if "truth" in row else ""
        print(f"{where:>12} {row['metric']:<13} {row['suite']:>10.2f} {row['vllm']:>10.2f} {row['ratio']:>7.4f} "
              f"[{row['ci95'][0]:.4f}, {hi if hi is None else f'{hi:.4f}'}]  {row['rounds']}{against}")
    if args.calibration_source and args.source_like:
        entries = attribute(engine_rows, rows)
        (args.out / "attribution.json").write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
        print_attribution(entries)
    print(json.dumps({"summary": str(args.out / "summary.json"), "rows": len(rows),
                      "within_2pct": sum(r["within_2pct"] for r in rows), "elapsed_s": round(session.elapsed(), 1)}))
    return 0


def _run(session: SideBySide, args: argparse.Namespace) -> None:
    def fits(point: Point) -> bool:
        return session.elapsed() + session.estimate(point) <= args.budget_s

    def schedule(kind: str, value: float) -> Schedule | None:
        return session.schedules.get((kind, float(value))) if session.fleet is not None else None

    concurrency = [Point("concurrency", c, schedule=schedule("concurrency", c)) for c in args.concurrency]
    session.points.extend(concurrency)
    for point in concurrency:
        while len(point.rounds) < args.min_rounds and fits(point):
            session.run_round(point)
    if args.rates == "none":
        rates: list[float] = []
    elif args.rates == "auto":
        top = max((p for p in concurrency if p.rounds), key=lambda p: p.value, default=None)
        rates = knee_rates(top) if top is not None else []
        if rates:
            session.notes.append(f"rates {rates} req/s: {list(RATE_FRACTIONS)} of vLLM's completed req/s at "
                                 f"C={top.value:g}")
    else:
        rates = [float(x) for x in args.rates.split(",") if x.strip()]
    rate_points = [Point("rate", r, schedule=schedule("rate", r)) for r in rates]
    session.points.extend(rate_points)
    for point in rate_points:
        while len(point.rounds) < args.min_rounds and fits(point):
            session.run_round(point)
    while True:  # more rounds, round-robin, while the budget allows
        candidates = [p for p in session.points if len(p.rounds) < args.max_rounds and fits(p)]
        if not candidates:
            break
        point = min(candidates, key=lambda p: (len(p.rounds), session.points.index(p)))
        session.run_round(point)
    short = [p.label for p in session.points if len(p.rounds) < args.min_rounds]
    if short:
        session.notes.append(f"budget {args.budget_s:g} s ran out before {args.min_rounds} rounds of {short}")


__all__ = ["SideBySide", "attribute", "knee_rates", "main", "parser"]
