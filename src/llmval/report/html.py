"""The status document as HTML: a self-contained `reports/report.html`, and a fragment for pytest-html.

Plots (`reports/*.png`, written by the perf and accuracy plugins) are embedded as data: URIs, so the
report is one file that CI can upload and anyone can open.
"""

from __future__ import annotations

import base64
from pathlib import Path

from ..core.files import read_regular
from .escape import html_text, render_inline
from .results import RunResults, parse_results
from .status import DECLARED, ERROR, FAIL, INFO, LIFT, OK, UNCHECKED, XFAIL, Section, StatusDocument

BADGES = {OK: ("holds", "#1a7f37"), FAIL: ("FAIL", "#cf222e"), ERROR: ("could not check", "#bc4c00"),
          XFAIL: ("blocked", "#6e40c9"), LIFT: ("LIFTED", "#cf222e"), UNCHECKED: ("not checked", "#6e7781"),
          DECLARED: ("declared", "#0969da"), INFO: ("", "")}
FAILING_OUTCOMES = ("failed", "error", "xpassed")
OUTCOME_COLOURS = {"passed": "#1a7f37", "failed": "#cf222e", "error": "#bc4c00", "xfailed": "#6e40c9",
                   "xpassed": "#cf222e", "skipped": "#6e7781"}
CSS = """
.llmval-status{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:14px;line-height:1.45;
 color:#1f2328;max-width:1100px}
.llmval-status h1{font-size:22px;margin:8px 0}.llmval-status h2{font-size:18px;border-bottom:1px solid #d0d7de;
 padding-bottom:3px;margin:18px 0 6px}.llmval-status h3{font-size:15px;margin:12px 0 4px}
.llmval-status .verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:bold}
.llmval-status .note{color:#57606a;font-style:italic;margin:0 0 4px}
.llmval-status ul{margin:2px 0 6px 0;padding-left:20px}.llmval-status li{margin:2px 0}
.llmval-status ul ul{color:#424a53;font-size:13px}
.llmval-status code{background:#f6f8fa;padding:0 3px;border-radius:3px;font-size:12.5px}
.llmval-status .badge{display:inline-block;min-width:62px;text-align:center;font-size:11px;color:#fff;
 border-radius:3px;padding:0 4px;margin-right:6px}
.llmval-status table{border-collapse:collapse;margin:4px 0 10px}.llmval-status td,.llmval-status th{
 border:1px solid #d0d7de;padding:2px 8px;font-size:13px;text-align:left}
.llmval-status th{background:#f6f8fa}.llmval-status figure{margin:8px 0;display:inline-block;vertical-align:top}
.llmval-status figure img{max-width:540px;border:1px solid #d0d7de}
.llmval-status figcaption{font-size:12px;color:#57606a}
.llmval-status details pre{white-space:pre-wrap;font-size:12px;background:#f6f8fa;padding:6px}
.llmval-status .broke{border:2px solid;border-radius:6px;padding:2px 12px 6px;margin:10px 0}
.llmval-status .broke.red{border-color:#cf222e;background:#fff8f8}.llmval-status .broke.green{border-color:#1a7f37;
 background:#f6fff8}.llmval-status .broke h2{border:0;margin:6px 0 2px}
.llmval-status .broke details summary{cursor:pointer;color:#424a53}
"""


def inline(text: str) -> str:
    """HTML of the Markdown the status document uses (`code`, **bold**, *italic*, backslash escapes), rendered
    as CommonMark with raw HTML, links and images off (llmval.report.escape.render_inline)."""
    return render_inline(text)


def _badge(state: str) -> str:
    label, colour = BADGES.get(state, ("", ""))
    return f'<span class="badge" style="background:{colour}">{label}</span>' if label else ""


def _broke(section: Section, verdict: str) -> str:
    """The "What broke" box: one line per root cause (its fix under it), the checks it stopped folded."""
    kind = "green" if verdict == "GREEN" else "red"
    items = []
    for item in section.items:
        sub = "".join(f"<li>{inline(d)}</li>" for d in item.detail)
        sub += "".join(f"<li><details><summary>{inline(label)}</summary><ul>"
                       + "".join(f"<li>{inline(line)}</li>" for line in lines) + "</ul></details></li>"
                       for label, lines in item.folds)
        items.append(f"<li>{_badge(item.state)}{inline(item.text)}" + (f"<ul>{sub}</ul>" if sub else "") + "</li>")
    return (f'<div class="broke {kind}"><h2>{inline(section.title)}</h2>'
            + (f'<p class="note">{inline(section.note)}</p>' if kind == "red" else "")
            + "<ul>" + "".join(items) + "</ul></div>")


def embed_png(path: Path) -> str:
    """A `data:` URI of a PNG file."""
    return "data:image/png;base64," + base64.b64encode(read_regular(path, 64 * 2**20)).decode("ascii")


def status_fragment(doc: StatusDocument, reports_dir: Path | None = None) -> str:
    """The status document as an HTML <div> (no <html> wrapper), plots embedded when reports_dir is given."""
    colour = "#1a7f37" if doc.verdict == "GREEN" else "#cf222e"
    parts = [f'<div class="llmval-status"><style>{CSS}</style>',
             f'<h1>{inline(doc.title)} <span class="verdict" style="background:{colour}">{doc.verdict}</span></h1>']
    parts += [f"<div>{inline(line)}</div>" for line in doc.summary]
    if doc.broke is not None:
        parts.append(_broke(doc.broke, doc.verdict))
    for section in doc.sections:
        tag = f"h{section.level}"
        parts.append(f"<{tag}>{inline(section.title)}</{tag}>")
        if section.note:
            parts.append(f'<p class="note">{inline(section.note)}</p>')
        tables = [f"<div><b>{inline(caption)}</b></div><table><tr>"
                  + "".join(f"<th>{inline(h)}</th>" for h in table.header) + "</tr>"
                  + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>" for row in table.rows)
                  + "</table>" for caption, table in section.tables]
        if section.tables_first:
            parts += tables
        if section.items:
            parts.append("<ul>")
            for item in section.items:
                children = "".join(f"<li>{_badge(c.state)}{inline(c.text)}</li>" for c in item.children)
                sub = "".join(f"<li>{inline(d)}</li>" for d in item.detail) + (
                    f"<li><ul>{children}</ul></li>" if children else "")
                parts.append(f"<li>{_badge(item.state)}{inline(item.text)}" + (f"<ul>{sub}</ul>" if sub else "")
                             + "</li>")
            parts.append("</ul>")
        if not section.tables_first:
            parts += tables
    if doc.plots and reports_dir is not None:
        parts.append("<h2>Plots</h2>")
        for name in doc.plots:
            path = Path(reports_dir) / name
            if path.is_file():
                parts.append(f'<figure><img alt="{html_text(name)}" src="{embed_png(path)}">'
                             f"<figcaption>{html_text(name)}</figcaption></figure>")
    parts.append("</div>")
    return "\n".join(parts)


def render_html(doc: StatusDocument, results: RunResults | dict, reports_dir: Path) -> str:
    """A self-contained HTML page: the verdict and what broke at the top, the status document, plots, then every
    test's verdict (failing ones first), from the run's typed results (a results document is parsed once)."""
    rows = []
    tests = parse_results(results).tests
    for test in sorted(tests, key=lambda t: t.outcome not in FAILING_OUTCOMES):  # what broke first, then in order
        outcome = test.outcome
        colour = OUTCOME_COLOURS.get(outcome, "#6e7781")
        evidence = "; ".join(f"{v.check} on {v.target}: {v.cause} — {v.observed}" for v in test.verdicts[:3])
        message = test.message
        detail = (f"<details><summary>message</summary><pre>{html_text(message)}</pre></details>"
                  if message else "")
        rows.append(f'<tr><td><span class="badge" style="background:{colour}">{html_text(outcome)}</span></td>'
                    f"<td><code>{html_text(test.nodeid)}</code>{detail}</td>"
                    f"<td>{html_text(evidence)}</td><td>{test.duration_s:.2f}</td></tr>")
    table = ('<div class="llmval-status"><h2>Every test</h2><table><tr><th>outcome</th><th>test</th>'
             "<th>evidence (first 3 verdicts)</th><th>s</th></tr>" + "".join(rows) + "</table></div>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html_text(doc.title)} — {doc.verdict}</title></head><body>\n"
            + status_fragment(doc, reports_dir) + "\n" + table + "\n</body></html>\n")
