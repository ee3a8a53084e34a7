"""Measure the smoke wall time of `tests/hosts` for 1 stand-in host and for 16 checked in parallel.

    .venv/bin/python -m selftest.hosts.measure_smoke [--hosts 1 16] [--workers auto]

Stand-in hosts are local-transport hosts with fake nvidia-smi/docker (selftest/hosts/standin.py); every
command is a real process on this machine. Prints one JSON line per run (wall seconds of the whole pytest
process, pytest's own session duration, outcome counts, load average before the run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selftest.hosts.standin import make_standins
from selftest.strategies import ROOT


def measure(n_hosts: int, workers: str, latency_s: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="llmval-smoke-") as tmp:
        inventory = make_standins(Path(tmp), [f"standin-{i:02d}" for i in range(1, n_hosts + 1)],
                                  latency_s=latency_s)
        xdist = ["-p", "no:xdist"] if workers == "0" else ["-n", workers]
        load = os.getloadavg()[0]
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "tests/hosts", "-m", "smoke", "-q", "--inventory",
                               str(inventory), "--reports", str(Path(tmp) / "reports"), *xdist],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        wall_s = time.monotonic() - started
        document = json.loads((Path(tmp) / "reports" / "results.json").read_text())
    return {"hosts": n_hosts, "workers": workers, "tool_latency_s": latency_s, "wall_s": round(wall_s, 2),
            "session_s": document["duration_s"],
            "counts": document["counts"], "rc": proc.returncode, "loadavg_before": round(load, 2),
            "cpus": os.cpu_count()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--workers", nargs="+", default=["0", "auto"], help="0 = no xdist; else -n value")
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0, 0.5],
                        help="seconds each fake nvidia-smi/docker call takes")
    args = parser.parse_args()
    for latency in args.latency:
        for n in args.hosts:
            for workers in args.workers:
                print(json.dumps(measure(n, workers, latency)), flush=True)


if __name__ == "__main__":
    main()
