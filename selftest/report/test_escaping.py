"""What a server, a host or the inventory says is data in every report (issue 23.3, the escaping part).

A model id `![x](http://…/track.png)` or `[click](javascript:…)`, an inventory string holding `\\n## Heading`,
a `/version` with NUL-digit-NUL, ESC, BEL: status.md renders none of it live (checked by rendering status.md
with a CommonMark renderer, raw HTML on, as GitHub would), report.html neither (and does not crash: NUL-digit-
NUL used to collide with its placeholder, IndexError), junit.xml still parses, the terminal gets escapes, not
control characters. The pure tests use only the reports' public functions, so they run against the code before
this change too (where 5 of them failed); the last test is the whole run against a loopback server.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from markdown_it import MarkdownIt

from llmval.core.verdict import make_verdict
from llmval.inventory import load_inventory, parse_inventory
from llmval.report import build_status, render_html, render_markdown
from llmval.report.junit import finish_junit
from llmval.report.results import Measured, RunResults, TestResult
from selftest.hostile.harness import run_contract
from selftest.hostile.server import MODEL, HostileServer, answer
from selftest.strategies import ROOT

TRACKER = "![x](http://t.example/track.png)"
CLICK = "[click](javascript:alert(1))"
HEADING = "ok\n## Heading\n<img src=x onerror=alert(1)>"
VERSION = "0.32.0\x001\x00 \x1b[2J\x07\x1b]0;owned\x07\r"
CONTROL = ("\x00", "\x07", "\x1b", "\r")


def _inventory():
    data = load_inventory(ROOT / "inventories" / "kpro6.toml").model_dump(mode="json", by_alias=True,
                                                                         exclude_none=True)
    data["deployment"]["goal"] = HEADING
    data["deployment"]["critical_context"] = [CLICK, TRACKER]
    return parse_inventory(data)


def _results() -> RunResults:
    held = make_verdict("kpro6-sglang", "serving.engine.version", expected="0.5.10", observed=VERSION, held=True)
    broken = make_verdict("kpro6-sglang", "serving.model.id", expected=["m"], observed=[TRACKER, CLICK],
                          held=False, hint=HEADING)
    return RunResults(deployment="kpro6", exitstatus=1, tests=[
        TestResult(nodeid="tests/serving/test_engine.py::test_version[kpro6-sglang]", outcome="passed",
                   verdicts=[held], measured=[Measured(target="kpro6-sglang", name="serving.engine.version",
                                                       value=VERSION)]),
        TestResult(nodeid="tests/serving/test_model.py::test_model[kpro6-sglang]", outcome="failed",
                   message=f"{TRACKER} {VERSION}", verdicts=[broken])])


def _live(html: str) -> list[str]:
    """What in rendered HTML is live: images, links, headings or tags that came from the values."""
    found = [tag for tag in ("<img", "<a ", "href=", "<h2>Heading", "onerror=alert(1)>") if tag in html]
    return found + [repr(c) for c in CONTROL if c in html]


def test_status_md_renders_no_server_or_inventory_string_live():
    markdown = render_markdown(build_status(_results(), _inventory()))
    rendered = MarkdownIt("commonmark").enable("table").render(markdown)  # raw HTML on, as GitHub's renderer
    assert not _live(rendered), [line for line in markdown.splitlines() if "track" in line or "Heading" in line]
    assert not [line for line in markdown.splitlines() if line.startswith("## Heading")]
    assert "track.png" in rendered and "javascript:alert(1)" in rendered and "Heading" in rendered  # shown as text
    assert not [c for c in CONTROL if c in markdown]
    assert "\\x1b[2J" in rendered  # what the server sent, readable


def test_report_html_shows_nul_digit_nul_and_markup_as_text():
    results = _results()
    page = render_html(build_status(results, _inventory()), results, ROOT)
    assert not _live(page)
    assert "track.png" in page and "Heading" in page and "\\x001\\x00" in page


def test_junit_parses_with_control_characters_in_what_the_server_said(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" '
                     'failures="0" tests="1"><testcase classname="t" name="x"/></testsuite></testsuites>')
    finish_junit(junit, _results(), load_inventory(ROOT / "inventories" / "kpro6.toml"))
    suite = ET.parse(junit).getroot().find("testsuite")
    version = {p.get("name"): p.get("value") for p in suite.find("properties")}["engine.kpro6-sglang"]
    assert version.startswith("sglang 0.32.0\\x001\\x00 \\x1b[2J"), version


def test_terminal_lines_of_a_verdict_carry_escapes_not_control_characters():
    broken = make_verdict("ep", "serving.engine.version", expected="1", observed=VERSION, held=False)
    for text in (broken.message(), broken.summary()):
        assert not [c for c in CONTROL if c in text] and "\\x1b[2J" in text


@pytest.mark.parametrize("value", [TRACKER, CLICK, HEADING, VERSION, "\x00\x001\x00\x00", "a`b``c", "\\*x\\*",
                                   "x_y _z_ ~~s~~ &amp; <b>|</b>"])
def test_every_value_shows_as_itself_in_both_renderings(value):
    results = RunResults(deployment="kpro6", exitstatus=1, tests=[TestResult(
        nodeid="t::x[kpro6-sglang]", outcome="failed",
        verdicts=[make_verdict("kpro6-sglang", "c.d", expected="e", observed=value, held=False)])])
    doc = build_status(results, load_inventory(ROOT / "inventories" / "kpro6.toml"))
    failing = render_markdown(doc).split("### Failing")[1].split("### Blocked")[0]
    html = MarkdownIt("commonmark").render(failing)
    shown = "".join(ET.fromstring(f"<r>{html}</r>").itertext())  # parses: no stray tag from the value
    expected = value.replace("\n", " ⏎ ").encode("unicode_escape").decode("ascii").replace("\\\\", "\\")
    assert expected.replace("\\u23ce", "⏎") in shown.encode("unicode_escape").decode("ascii").replace(
        "\\\\", "\\").replace("\\u23ce", "⏎"), shown


@pytest.mark.subprocess
def test_hostile_model_ids_and_version_end_in_reports_that_parse_and_show_them_as_text(tmp_path):
    """The whole serving smoke against a loopback server (the /version is not taken for vLLM's: only the model
    ids reach the reports from it; the pure tests above carry the version into every format)."""
    models = {"object": "list", "data": [{"id": MODEL, "object": "model", "max_model_len": 8192},
                                         {"id": TRACKER, "object": "model"}, {"id": CLICK, "object": "model"}]}
    with HostileServer({"/version": answer({"version": VERSION}), "/v1/models": answer(models)}) as server:
        run = run_contract(server, tmp_path, endpoint={"request_timeout_s": 10})
    assert "Traceback" not in run.terminal and "IndexError" not in run.terminal, run.terminal[-3000:]
    status = run.files["reports/partial/status.md"]
    results = json.loads(run.files["reports/results.json"])
    assert ("GREEN" in status.splitlines()[2]) == (results["exitstatus"] == 0), status[:600]
    assert run.rc == results["exitstatus"] != 0, run.terminal[-3000:]  # two model ids more than declared
    ET.fromstring(run.files["reports/junit.xml"])  # CI can read it
    assert not _live(MarkdownIt("commonmark").render(status)) and not _live(run.files["reports/partial/report.html"])
    assert "track.png" in status and "javascript:alert(1)" in status  # shown, as text
    assert not [c for c in CONTROL if c in run.terminal], [line for line in run.terminal.splitlines()
                                                            if any(c in line for c in CONTROL)]
