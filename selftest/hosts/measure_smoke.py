"""Measure the smoke wall time of `tests/hosts` for 1 stand-in host and for 16 checked in parallel.

    .venv/bin/python -m selftest.hosts.measure_smoke [--hosts 1 16 64] [--workers 0 2 auto] [--latency 0.5]
                                                     [--repeat 3] [--out runs.jsonl] [--budget 500]

Stand-in hosts are local-transport hosts with fake nvidia-smi/docker (selftest/hosts/standin.py); every
command is a real process on this machine. Prints one JSON line per run (wall seconds of the whole pytest
process, pytest's own session duration, CPU seconds of the run's process tree, outcome counts, load average
before the run, whether Python writes bytecode caches), then, with --repeat, one JSON line per (latency, hosts,
workers) with the medians and the ratio of the median wall to one host's in one process. The rounds are
interleaved (every configuration once, then again), so a machine whose load changes affects them alike.

`--out FILE` appends every line to FILE as it is printed (a run killed later still leaves what it measured);
`--budget S` starts no run predicted to end more than S seconds after the command started (`predicted_wall_s`:
from the walls seen so far; a skipped run prints a `"skipped": true` line) and stops any run still going at S
seconds (its line says `"timed_out": true`, no counts), so a device call stays inside its limit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from selftest.hosts.standin import make_standins
from selftest.strategies import ROOT


def real_local_inventory(folder: Path, n_hosts: int) -> Path:
    """N copies of the H200 host of selftest/data/inventories/h200x2.toml: this machine's REAL nvidia-smi/fuser."""
    text = (ROOT / "selftest" / "data" / "inventories" / "h200x2.toml").read_text()
    head, host = text.split("[[hosts]]", 1)
    hosts = "".join("[[hosts]]" + host.replace('name = "h200"', f'name = "h200-{i:02d}"')
                    for i in range(1, n_hosts + 1))
    path = folder / "real-local.toml"
    path.write_text(head + hosts)
    return path


def measure(n_hosts: int, workers: str, latency_s: float, kind: str, extra: list[str], health: bool = False,
            timeout_s: float = 900) -> dict:
    with tempfile.TemporaryDirectory(prefix="llmval-smoke-") as tmp:
        if kind == "real-local":
            inventory = real_local_inventory(Path(tmp), n_hosts)
        else:
            inventory = make_standins(Path(tmp), [f"standin-{i:02d}" for i in range(1, n_hosts + 1)],
                                      latency_s=latency_s, health=health)
        xdist = ["-p", "no:xdist"] if workers == "0" else ["-n", workers]
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        # its own session, so that a run past its time is stopped whole (xdist workers and stand-in tools too)
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "tests/hosts", "-m", "smoke", "-q", "--inventory",
                                 str(inventory), "--reports", str(Path(tmp) / "reports"), *xdist, *extra],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            output = proc.communicate(timeout=timeout_s)[0]
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output = proc.communicate()[0]
            rc = None
        wall_s = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        results = Path(tmp) / "reports" / "results.json"
        document = ({"duration_s": None, "counts": None} if rc is None else
                    json.loads(results.read_text()) if results.exists() else _from_junit(Path(tmp) / "reports"))
    return {"kind": kind, "health": health, "hosts": n_hosts, "workers": workers, "tool_latency_s": latency_s,
            "wall_s": round(wall_s, 2), "timed_out": rc is None,
            "session_s": document["duration_s"], "cpu_s": round(cpu_s, 2),
            "counts": document["counts"], "rc": rc, "loadavg_before": round(load, 2),
            "cpus": os.cpu_count(), "writes_bytecode": not os.environ.get("PYTHONDONTWRITEBYTECODE"),
            **({} if rc == 0 else {"output_tail": output[-1500:]})}


def _from_junit(reports: Path) -> dict:
    """Session time and counts from junit.xml, for runs without the results plugin."""
    suite = ET.parse(reports / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    return {"duration_s": float(suite.get("time", 0)), "counts": {
        "passed": int(suite.get("tests", 0)) - bad - skipped, "skipped": skipped, "failed_or_error": bad}}


def predicted_wall_s(runs: list[dict], n_hosts: int) -> float:
    """How long a run of `n_hosts` will likely take, from the runs so far (each host count's longest wall): that
    host count's; else the next larger host count's (more hosts take no less); else the line through the two
    largest host counts, extended to `n_hosts` (one host count seen: its wall); else 0 (nothing known)."""
    longest: dict[int, float] = {}
    for run in runs:
        longest[run["hosts"]] = max(longest.get(run["hosts"], 0.0), run["wall_s"])
    if not longest:
        return 0.0
    larger = [size for size in longest if size >= n_hosts]
    if larger:
        return longest[min(larger)]
    sizes = sorted(longest)
    if len(sizes) == 1:
        return longest[sizes[0]]
    small, big = sizes[-2:]
    slope = max(0.0, (longest[big] - longest[small]) / (big - small))
    return longest[big] + slope * (n_hosts - big)


def summarize(runs: list[dict]) -> list[dict]:
    """Medians per (latency, hosts, workers) over the runs that ended (`n`; `timed_out` counts those stopped at the
    budget), and the median wall over one host's in one process (same latency)."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["tool_latency_s"], run["hosts"], run["workers"]), []).append(run)
    rows = []
    for (latency, hosts, workers), group in groups.items():
        done = [r for r in group if not r.get("timed_out")]  # a stopped run's wall is only a lower bound

        def median(key: str, runs: list[dict] = done) -> float | None:
            return round(statistics.median(r[key] for r in runs), 2) if runs else None

        rows.append({"summary": True, "tool_latency_s": latency, "hosts": hosts, "workers": workers, "n": len(done),
                     "timed_out": len(group) - len(done), "wall_s_median": median("wall_s"),
                     "wall_s_all": [r["wall_s"] for r in group], "cpu_s_median": median("cpu_s"),
                     "loadavg_median": median("loadavg_before", group),
                     "rc": sorted({r["rc"] for r in group}, key=str)})
    for row in rows:
        base = next((r for r in rows if r["tool_latency_s"] == row["tool_latency_s"] and r["hosts"] == 1
                     and r["workers"] == "0" and r["wall_s_median"]), None)
        row["vs_one_host_one_process"] = (round(row["wall_s_median"] / base["wall_s_median"], 2)
                                          if base and row["wall_s_median"] else None)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--workers", nargs="+", default=["0", "auto"], help="0 = no xdist; else -n value")
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0, 0.5],
                        help="seconds each fake nvidia-smi/docker call takes")
    parser.add_argument("--kind", choices=["standin", "real-local"], default="standin",
                        help="standin: fake nvidia-smi/docker; real-local: N names for this machine (real GPUs)")
    parser.add_argument("--extra", default="", help="more pytest arguments, one string")
    parser.add_argument("--health", action="store_true", help="stand-ins also declare [hosts.gpus.health]")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every configuration (medians printed)")
    parser.add_argument("--out", type=Path, help="also append every line to this file, as it is printed")
    parser.add_argument("--budget", type=float, help="seconds: start no run predicted to end later, stop any then")
    args = parser.parse_args()
    started = time.monotonic()

    def emit(row: dict) -> None:
        line = json.dumps(row)
        print(line, flush=True)
        if args.out:
            with args.out.open("a") as out:
                out.write(line + "\n")

    runs: list[dict] = []
    for _ in range(max(1, args.repeat)):
        for latency in args.latency if args.kind == "standin" else [0.0]:
            for n in args.hosts:
                for workers in args.workers:
                    left_s = 900.0 if args.budget is None else args.budget - (time.monotonic() - started)
                    if args.budget is not None and (left_s < 1 or predicted_wall_s(runs, n) > left_s):
                        emit({"skipped": True, "hosts": n, "workers": workers, "tool_latency_s": latency,
                              "predicted_wall_s": round(predicted_wall_s(runs, n), 1), "left_s": round(left_s, 1)})
                        continue
                    runs.append(measure(n, workers, latency, args.kind, args.extra.split(), args.health,
                                        timeout_s=left_s))
                    emit(runs[-1])
    if args.repeat > 1:
        for row in summarize(runs):
            emit(row)


if __name__ == "__main__":
    main()
