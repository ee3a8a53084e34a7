"""Measure the smoke wall time of `tests/hosts` for 1 stand-in host and for 16 checked in parallel.

    .venv/bin/python -m selftest.hosts.measure_smoke [--hosts 1 16 64] [--workers 0 2 auto] [--latency 0.5]
                                                     [--repeat 3]

Stand-in hosts are local-transport hosts with fake nvidia-smi/docker (selftest/hosts/standin.py); every
command is a real process on this machine. Prints one JSON line per run (wall seconds of the whole pytest
process, pytest's own session duration, CPU seconds of the run's process tree, outcome counts, load average
before the run, whether Python writes bytecode caches), then, with --repeat, one JSON line per (latency, hosts,
workers) with the medians and the ratio of the median wall to one host's in one process. The rounds are
interleaved (every configuration once, then again), so a machine whose load changes affects them alike.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def measure(n_hosts: int, workers: str, latency_s: float, kind: str, extra: list[str], health: bool = False) -> dict:
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
        proc = subprocess.run([sys.executable, "-m", "pytest", "tests/hosts", "-m", "smoke", "-q", "--inventory",
                               str(inventory), "--reports", str(Path(tmp) / "reports"), *xdist, *extra],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        wall_s = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        results = Path(tmp) / "reports" / "results.json"
        document = json.loads(results.read_text()) if results.exists() else _from_junit(Path(tmp) / "reports")
    return {"kind": kind, "health": health, "hosts": n_hosts, "workers": workers, "tool_latency_s": latency_s,
            "wall_s": round(wall_s, 2),
            "session_s": document["duration_s"], "cpu_s": round(cpu_s, 2),
            "counts": document["counts"], "rc": proc.returncode, "loadavg_before": round(load, 2),
            "cpus": os.cpu_count(), "writes_bytecode": not os.environ.get("PYTHONDONTWRITEBYTECODE")}


def _from_junit(reports: Path) -> dict:
    """Session time and counts from junit.xml, for runs without the results plugin."""
    suite = ET.parse(reports / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    return {"duration_s": float(suite.get("time", 0)), "counts": {
        "passed": int(suite.get("tests", 0)) - bad - skipped, "skipped": skipped, "failed_or_error": bad}}


def summarize(runs: list[dict]) -> list[dict]:
    """Medians per (latency, hosts, workers), and the median wall over one host's in one process (same latency)."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["tool_latency_s"], run["hosts"], run["workers"]), []).append(run)
    rows = []
    for (latency, hosts, workers), group in groups.items():
        rows.append({"summary": True, "tool_latency_s": latency, "hosts": hosts, "workers": workers, "n": len(group),
                     "wall_s_median": round(statistics.median(r["wall_s"] for r in group), 2),
                     "wall_s_all": [r["wall_s"] for r in group],
                     "cpu_s_median": round(statistics.median(r["cpu_s"] for r in group), 2),
                     "loadavg_median": round(statistics.median(r["loadavg_before"] for r in group), 2),
                     "rc": sorted({r["rc"] for r in group})})
    for row in rows:
        base = next((r for r in rows if r["tool_latency_s"] == row["tool_latency_s"] and r["hosts"] == 1
                     and r["workers"] == "0"), None)
        row["vs_one_host_one_process"] = round(row["wall_s_median"] / base["wall_s_median"], 2) if base else None
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
    args = parser.parse_args()
    runs = []
    for _ in range(max(1, args.repeat)):
        for latency in args.latency if args.kind == "standin" else [0.0]:
            for n in args.hosts:
                for workers in args.workers:
                    runs.append(measure(n, workers, latency, args.kind, args.extra.split(), args.health))
                    print(json.dumps(runs[-1]), flush=True)
    if args.repeat > 1:
        for row in summarize(runs):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
