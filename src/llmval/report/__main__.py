"""`python -m llmval.report [REPORTS_DIR] [--inventory PATH]`: re-render status.md and report.html.

Reads REPORTS_DIR/results.json (default reports/), the inventory it names (or --inventory), and the latest
earlier run of the same deployment in the run's history; writes the run's status.md and report.html where the run
itself wrote them: REPORTS_DIR for a live run of a declared scope, its replay/ or partial/ folder for a replay or
a partial run (`llmval.report.scope.record_dir`; results.json is always the latest run's, whatever its scope), so
re-rendering after the README's replay never makes the replay the deployment's status.md.
Exit status 0 when the run was green, 1 when red, 2 when it cannot render (the cause on stderr).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

from ..core.errors import LlmvalError
from ..inventory import load_inventory
from .files import ReportsNotWritable, plots_written_since, reports_lock, write_report
from .html import render_html
from .results import RESULTS_FILE, RunResults, history_files, load_results, parse_results
from .scope import record_dir
from .status import build_status, render_markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmval.report", description=__doc__.splitlines()[0])
    parser.add_argument("reports_dir", nargs="?", default="reports", type=Path)
    parser.add_argument("--inventory", type=Path, help="inventory TOML (default: the one results.json names)")
    args = parser.parse_args(argv)
    if not args.reports_dir.is_dir():
        return _render(args)  # says there are no results to render
    try:
        with reports_lock(args.reports_dir):  # the set it reads is one run's, and a run's writer waits for it
            return _render(args)
    except ReportsNotWritable as error:
        print(f"llmval.report: {error}", file=sys.stderr)
        return 4


def run_folders(reports_dir: Path, results: RunResults) -> tuple[Path, Path]:
    """(the reports folder the run's plots are in, the folder its status.md, report.html and history are in) for
    the results.json read from `reports_dir`: a replay's or partial run's record is under the reports folder, and
    `reports_dir` may be that record itself (`python -m llmval.report reports/replay`).

    >>> from llmval.report.results import RunResults
    >>> [tuple(map(str, run_folders(Path(d), RunResults(mode="replay", scope="smoke")))) for d in ("r", "r/replay")]
    [('r', 'r/replay'), ('r', 'r/replay')]
    """
    own = record_dir(Path("."), results.run_scope, replayed=results.mode == "replay").parts
    if own and Path(reports_dir).parts[-len(own):] == own:
        return Path(*Path(reports_dir).parts[:-len(own)]), Path(reports_dir)
    return Path(reports_dir), Path(reports_dir, *own)


def _render(args: argparse.Namespace) -> int:
    try:
        results = parse_results(load_results(args.reports_dir / RESULTS_FILE))  # typed once, read by every report
        inventory = load_inventory(args.inventory or Path(results.inventory))
        top, record = run_folders(args.reports_dir, results)
        earlier = [p for p in history_files(record, results.deployment)
                   if load_results(p).get("started", "") < results.started]
        previous = parse_results(load_results(earlier[-1])) if earlier else None
    except LlmvalError as error:
        print(f"llmval.report: cannot render: {error}", file=sys.stderr)
        return 2
    try:  # the run's own plots: written since it started
        plots = plots_written_since(top, dt.datetime.fromisoformat(results.started))
    except ValueError:
        plots = []
    doc = build_status(results, inventory, previous=previous,
                       previous_name=f"history/{earlier[-1].name}" if earlier else None, plots=plots)
    plots_at = Path(os.path.relpath(top, record)).as_posix() + "/"  # as the plugin links them (../niah-grid.png)
    try:
        record.mkdir(parents=True, exist_ok=True)
        write_report(record / "status.md", render_markdown(doc, "" if plots_at == "./" else plots_at))
        write_report(record / "report.html", render_html(doc, results, top))
    except (LlmvalError, OSError) as error:
        print(f"llmval.report: {error}", file=sys.stderr)
        return 4
    print(f"{doc.verdict}: {record / 'status.md'} · {record / 'report.html'}")
    return 0 if doc.verdict == "GREEN" else 1


if __name__ == "__main__":
    sys.exit(main())
