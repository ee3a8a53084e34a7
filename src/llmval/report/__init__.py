"""The run's reports for people: the status document (Markdown and HTML), the diff against the last run,
and the judgement of known blockers.

Pure: everything here takes the run's typed results (`llmval.report.results.RunResults`; a results JSON document is
parsed once at the entry) and the inventory and returns text or data, reading the verdicts' typed fields, never
their message text; the pytest glue is fixtures/reporting.py and fixtures/blockers.py.

    build_status(results, inventory, previous=..., plots=[...]) -> StatusDocument
    render_markdown(doc) -> str                # reports/status.md
    render_html(doc, results, reports_dir)     # reports/report.html, plots embedded
    diff_runs(previous, current) -> [Change]   # "Changed since last run"
    judge(blockers, verdicts, nodeid, failed=) # strict-xfail verdicts of known blockers
    junit.finish_junit(path, results, inv)     # junit for CI: suite named after the deployment, <error>s
    prometheus.write_textfile(path, results)   # the run's series for node_exporter's textfile collector
    trend.write_trend(trend.read_runs(files), out_dir)   # many runs' history as one page with plots
"""

from __future__ import annotations

from ..core.secrets import inventory_secret_values, redact_tree
from .blockers import BlockerVerdict, judge, lifted_message, reference_problems, xfail_reason
from .diff import Change, diff_runs, flatten, inventory_changes
from .files import ReportsNotWritable
from .html import render_html, status_fragment
from .prometheus import TextfileNotWritable
from .status import (
    StatusDocument,
    build_status,
    by_test,
    evidence_paths,
    render_markdown,
    root_cause_records,
    root_causes,
)
from .trend import TrendRefused

__all__ = [
    "BlockerVerdict",
    "Change",
    "ReportsNotWritable",
    "StatusDocument",
    "TextfileNotWritable",
    "TrendRefused",
    "build_status",
    "by_test",
    "diff_runs",
    "evidence_paths",
    "flatten",
    "inventory_changes",
    "inventory_secret_values",
    "judge",
    "lifted_message",
    "redact_tree",
    "reference_problems",
    "render_html",
    "render_markdown",
    "root_cause_records",
    "root_causes",
    "status_fragment",
    "xfail_reason",
]
