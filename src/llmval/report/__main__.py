"""`python -m llmval.report [REPORTS_DIR] [--inventory PATH]`: re-render status.md and report.html.

Reads REPORTS_DIR/results.json (default reports/), the inventory it names (or --inventory), and the latest
earlier run of the same deployment in REPORTS_DIR/history/; writes REPORTS_DIR/status.md and report.html.
Exit status 0 when the run was green, 1 when red, 2 when it cannot render (the cause on stderr).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from ..core.errors import LlmvalError
from ..inventory import load_inventory
from .files import ReportsNotWritable, plots_written_since, reports_lock, write_report
from .html import render_html
from .results import RESULTS_FILE, history_files, load_results, parse_results
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


def _render(args: argparse.Namespace) -> int:
    try:
        results = parse_results(load_results(args.reports_dir / RESULTS_FILE))  # typed once, read by every report
        inventory = load_inventory(args.inventory or Path(results.inventory))
        earlier = [p for p in history_files(args.reports_dir, results.deployment)
                   if load_results(p).get("started", "") < results.started]
        previous = parse_results(load_results(earlier[-1])) if earlier else None
    except LlmvalError as error:
        print(f"llmval.report: cannot render: {error}", file=sys.stderr)
        return 2
    try:  # the run's own plots: written since it started
        plots = plots_written_since(args.reports_dir, dt.datetime.fromisoformat(results.started))
    except ValueError:
        plots = []
    doc = build_status(results, inventory, previous=previous,
                       previous_name=f"history/{earlier[-1].name}" if earlier else None, plots=plots)
    try:
        write_report(args.reports_dir / "status.md", render_markdown(doc))
        write_report(args.reports_dir / "report.html", render_html(doc, results, args.reports_dir))
    except LlmvalError as error:
        print(f"llmval.report: {error}", file=sys.stderr)
        return 4
    print(f"{doc.verdict}: {args.reports_dir / 'status.md'} · {args.reports_dir / 'report.html'}")
    return 0 if doc.verdict == "GREEN" else 1


if __name__ == "__main__":
    sys.exit(main())
