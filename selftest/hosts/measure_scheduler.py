"""Measure the CPU the controller spends scheduling host checks under xdist (fixtures/fleet.py's scheduler).

    .venv/bin/python -m selftest.hosts.measure_scheduler [--hosts 256 1024] [--workers 4 16]

The scheduler is driven as xdist's controller drives it: every worker registers the same collection (the real
smoke collection of `tests/hosts` over N stand-in hosts, selftest/hosts/standin.py, collected once in a child
pytest), the scheduler hands out the work, and each worker reports its tests complete in the order it was sent
them, the workers in turn, with the `tests_finished` check xdist makes after every event. The workers are
synthesized (`SyntheticWorker`): no process, no test runs; what is measured is the scheduler's own CPU, which the
controller spends serially for every test while the workers wait. Prints one JSON line per (hosts, workers).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from fixtures.fleet import pytest_xdist_make_scheduler
from fixtures.options import SETTINGS_KEY
from llmval.inventory import Inventory, load_inventory
from selftest.hosts.standin import make_standins
from selftest.strategies import ROOT


class SyntheticWorker:
    """A stand-in for xdist's WorkerController as the scheduler sees it: an id, the test indexes sent to it."""

    def __init__(self, index: int):
        self.gateway = SimpleNamespace(id=f"gw{index}")
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


class _Log:
    def __getattr__(self, name: str) -> _Log:
        return self

    def __call__(self, *args: object) -> None:
        pass


def host_scheduler(inventory: Inventory, workers: int):
    """fixtures/fleet.py's scheduler for `workers` workers (`-n workers`, `--dist load`), over `inventory`."""
    config = SimpleNamespace(stash={SETTINGS_KEY: SimpleNamespace(inventory=inventory)},
                             option=SimpleNamespace(loadscopereorder=False),
                             getoption=lambda name, default=None: {"dist": "load"}.get(name, default),
                             getvalue=lambda name: {"tx": [f"{workers}*popen"]}[name])
    return pytest_xdist_make_scheduler(config, _Log())


def smoke_collection(inventory_path: Path) -> list[str]:
    """The node ids `pytest tests/hosts -m smoke` collects for the inventory (one process, collect only)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "tests/hosts", "-m", "smoke", "-q", "--collect-only",
                          "-p", "no:xdist", f"--inventory={inventory_path}"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600).stdout
    return [line for line in out.splitlines() if "::" in line and not line.startswith(" ")]


def drive(inventory: Inventory, collection: list[str], workers: int) -> dict:
    scheduler, nodes = host_scheduler(inventory, workers), [SyntheticWorker(i) for i in range(workers)]
    started = time.process_time()
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, [str(nodeid) for nodeid in collection])  # each its own strings
    scheduler.schedule()
    done = 0
    while any(node.sent for node in nodes):
        for node in nodes:
            if node.sent:
                scheduler.mark_test_complete(node, node.sent.pop(0))
                done += 1
            _ = scheduler.tests_finished
    cpu_s = time.process_time() - started
    return {"tests": len(collection), "completed": done, "scheduler_cpu_s": round(cpu_s, 3),
            "us_a_test": round(cpu_s / max(1, done) * 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--workers", type=int, nargs="+", default=[4, 16])
    args = parser.parse_args()
    for n_hosts in args.hosts:
        with tempfile.TemporaryDirectory(prefix="llmval-sched-") as tmp:
            path = make_standins(Path(tmp), [f"standin-{i:02d}" for i in range(1, n_hosts + 1)], latency_s=0.5)
            inventory, collection = load_inventory(path), smoke_collection(path)
            for workers in args.workers:
                print(json.dumps({"hosts": n_hosts, "workers": workers, **drive(inventory, collection, workers)}),
                      flush=True)


if __name__ == "__main__":
    main()
