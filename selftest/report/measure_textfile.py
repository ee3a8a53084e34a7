"""Measure what `--prometheus-textfile` costs a many-host run (docs/perf.md, issue 47).

    .venv/bin/python -m selftest.report.measure_textfile [--hosts 256] [--repeat 20]

Runs the host smoke once over N stand-in hosts (selftest/hosts/standin.py, as measure_smoke does) with
`--prometheus-textfile`, then times the writer on that run's own results.json, `--repeat` times each: the series
(`run_series`), the exposition (prometheus_client's `generate_latest`), and `write_textfile` into a fresh folder and
over the file it wrote before (read back, parsed, merged, renamed): as the partial run it is (`tests/hosts`), and as
the smoke unit's run of the whole contract (the same results with scope smoke: its own old lines are not parsed).
Prints one JSON line: the run's wall time and counts, the file's size and series, and the median and max
milliseconds of each step.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llmval.report.prometheus import exposition, run_series, write_textfile
from llmval.report.results import load_results, parse_results
from selftest.hosts.standin import make_standins
from selftest.strategies import ROOT


def timed(step, repeat: int) -> dict:
    """Median and max milliseconds of `step()` over `repeat` calls."""
    spent = []
    for _ in range(repeat):
        started = time.perf_counter()
        step()
        spent.append((time.perf_counter() - started) * 1000)
    return {"median_ms": round(statistics.median(spent), 1), "max_ms": round(max(spent), 1)}


def measure(n_hosts: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="llmval-textfile-") as tmp:
        folder = Path(tmp)
        inventory = make_standins(folder, [f"standin-{i:03d}" for i in range(1, n_hosts + 1)], latency_s=0.0)
        textfile = folder / "collector" / "llmval.prom"
        textfile.parent.mkdir()
        started = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "pytest", "tests/hosts", "-m", "smoke", "-q", "-p", "no:xdist",
                              "--inventory", str(inventory), "--reports", str(folder / "reports"),
                              f"--prometheus-textfile={textfile}"], cwd=ROOT, capture_output=True, text=True,
                             timeout=900)
        wall_s = time.monotonic() - started
        said = next((line for line in run.stdout.splitlines() if line.startswith("llmval prometheus textfile")), "")
        results = parse_results(load_results(folder / "reports" / "results.json"))
        fresh = folder / "fresh"
        fresh.mkdir()
        smoke, smoke_file = results.model_copy(update={"scope": "smoke", "selection": ""}), fresh / "smoke.prom"
        write_textfile(smoke_file, smoke)
        return {
            "hosts": n_hosts, "run_wall_s": round(wall_s, 2), "rc": run.returncode, "counts": results.counts,
            "tests": len(results.tests), "textfile_bytes": textfile.stat().st_size, "summary_line": said,
            "series": len(run_series(results)),
            "results_json_bytes": (folder / "reports" / "results.json").stat().st_size,
            "run_series": timed(lambda: run_series(results), repeat),
            "exposition": timed(lambda: exposition(results), repeat),
            "write_new_file": timed(lambda: (fresh / "llmval.prom").unlink(missing_ok=True)
                                    or write_textfile(fresh / "llmval.prom", results), repeat),
            "scope": results.scope,
            # `tests/hosts -m smoke` is a partial run: over its previous file it parses and merges check by check
            "write_over_previous": timed(lambda: write_textfile(textfile, results), repeat),
            # the same results as the smoke unit's run (all of the contract, -m smoke): its own old lines unparsed
            "write_over_previous_as_smoke": timed(lambda: write_textfile(smoke_file, smoke), repeat),
            "repeat": repeat,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(measure(args.hosts, args.repeat)))


if __name__ == "__main__":
    main()
