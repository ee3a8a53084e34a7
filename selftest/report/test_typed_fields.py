"""Reports read the typed verdict (issue 22.3): cause, error, paths and the skip/xfail reasons are fields, never words.

Each test gives a report text that reads like the other kind ("could not check" in a broken verdict, "expected:" in
a check that could not be made, a plain assert quoting both) and shows that status.md, junit and results.json
classify it by its typed field. The paths under "Relevant files" are the typed path arguments of the host facts a
check read (`Verdict.paths`), not paths found in its text; and a verdict's text is redacted once, when it is made:
rendering the reports redacts none of it again.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

from llmval.core import contract
from llmval.core.errors import LlmvalError
from llmval.core.verdict import Cause, PathRead, could_not_check, make_verdict
from llmval.hostfacts import HostFacts, watch_reads
from llmval.inventory import load_inventory
from llmval.io.recording import CommandResult
from llmval.report import build_status, render_html, render_markdown
from llmval.report import status as status_module
from llmval.report.junit import finish_junit
from llmval.report.results import RunResults, TestResult, document_of
from selftest.report.runs import INVENTORIES, run_with
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
KPRO6 = ROOT / "inventories" / "kpro6.toml"


def _status(*tests: TestResult) -> str:
    results = RunResults(deployment="kpro6", exitstatus=1, tests=list(tests))
    return render_markdown(build_status(results, load_inventory(KPRO6)))


def _failing(status: str) -> str:
    return status.split("### Failing")[1].split("### Blocked")[0]


def test_a_broken_verdict_in_could_not_check_words_is_broken():
    verdict = make_verdict("kpro6-ct129", "hosts.fan.speed", expected="spinning", held=False,
                           observed="could not check (CommandTimeout): the fan")
    failing = _failing(_status(TestResult(nodeid="t::test_fan[kpro6-ct129]", outcome="failed", verdicts=[verdict])))
    assert "❌ `hosts.fan.speed` on kpro6-ct129: expected spinning, observed could not check (CommandTimeout)" \
        in failing
    assert "⚠️" not in failing


def test_a_could_not_check_verdict_in_mismatch_words_is_could_not_check():
    verdict = could_not_check("kpro6-ct129", "hosts.gpu.count", LlmvalError("expected: 4\n  observed: 3"))
    failing = _failing(_status(TestResult(nodeid="t::test_count[kpro6-ct129]", outcome="error", verdicts=[verdict])))
    assert "⚠️ `hosts.gpu.count` on kpro6-ct129 — could not check (LlmvalError): expected: 4" in failing


def test_a_failure_no_verdict_explains_is_classified_by_its_outcome_not_its_words():
    words = "could not check (HostUnreachable): expected: 4"
    broken = TestResult(nodeid="t::test_plain[kpro6-ct129]", outcome="failed", message=f"E  AssertionError: {words}",
                        crash=f"AssertionError: {words}")
    errored = TestResult(nodeid="t::test_setup[kpro6-ct129]", outcome="error", message="E  RuntimeError: boom",
                         crash="RuntimeError: boom")
    failing = _failing(_status(broken, errored))
    assert "❌ `test_plain` on kpro6-ct129: expected , observed AssertionError: could not check" in failing
    assert "⚠️ `test_setup` on kpro6-ct129 — could not check (error): RuntimeError: boom" in failing


def test_skip_and_xfail_reasons_come_from_their_fields():
    status = _status(
        TestResult(nodeid="t::test_a[x]", outcome="skipped", message="Skipped: words of the message",
                   skip_reason="the inventory declares no [hosts.ray]"),
        TestResult(nodeid="t::test_b[x]", outcome="xfailed", message="xfail: words of the message\nmore",
                   xfail_reason="the test's own xfail reason"))
    assert "1× the inventory declares no [hosts.ray]" in status
    assert "the test's own xfail reason" in status and "words of the message" not in status


def test_junit_error_or_failure_follows_the_outcome_and_cause(tmp_path):
    broken = make_verdict("h", "c.broken", expected="1", observed="could not check (X): y", held=False)
    unmade = could_not_check("h", "c.unmade", LlmvalError("expected: 1"))
    results = RunResults(deployment="d", exitstatus=1, tests=[
        TestResult(nodeid="tests/t.py::test_broken", outcome="failed", verdicts=[broken]),
        TestResult(nodeid="tests/t.py::test_unmade", outcome="error", verdicts=[unmade])])
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuites><testsuite name="pytest" failures="2" errors="0">'
                     '<testcase classname="tests.t" name="test_broken"><failure message="m">x</failure></testcase>'
                     '<testcase classname="tests.t" name="test_unmade"><failure message="m">x</failure></testcase>'
                     "</testsuite></testsuites>")
    finish_junit(junit, results, load_inventory(KPRO6))
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["test_broken"].find("failure") is not None and cases["test_broken"].find("error") is None
    error = cases["test_unmade"].find("error")
    assert error is not None and error.get("type") == "LlmvalError"
    assert error.get("message") == "could not check (LlmvalError): expected: 1"


def test_relevant_files_are_the_typed_path_arguments_of_the_facts_read_cached_reads_included():
    class Listing:  # a host answering `find -L {path} ...` (llmval.hostfacts.files.FILE_LIST)
        name = "gpu-node-03"

        def run(self, command, timeout_s=None):
            return CommandResult(self.name, str(command), 0, "12 1700000000.0 /models/m/a.safetensors\n", "")

    facts = HostFacts(Listing())
    facts.file_listing("/models/m")  # read before the test (prefetch): nothing watches
    reads = watch_reads()
    facts.file_listing("/models/m")  # the test's read is a cache hit
    assert reads == [("gpu-node-03", "/models/m")]
    verdict = make_verdict("gpu-node-03", "hosts.model_files.present", expected="present", held=True,
                           observed="all present under /etc/not/read/by/this/check",
                           paths=tuple(PathRead(host=h, path=p) for h, p in reads))
    status = _status(TestResult(nodeid="t::test_files[gpu-node-03]", outcome="passed", verdicts=[verdict]))
    files = status.split("## Relevant files")[1]
    assert "**gpu-node-03**" in files and "`/models/m` — checked by hosts.model_files.present" in files
    assert "/etc/not/read" not in files


def test_verdict_text_is_redacted_once_when_made_and_never_again_by_the_reports(monkeypatch, tmp_path):
    secret = "sk-" + "A1b2C3d4E5f6G7h8J9k0"
    verdict = make_verdict("kpro6-sglang", "serving.model.id", expected="m", observed=f"key {secret}", held=False,
                           evidence=f"Authorization: Bearer {secret}")
    assert secret not in verdict.observed + verdict.evidence
    results = RunResults(deployment="kpro6", exitstatus=1, tests=[
        TestResult(nodeid="t::test_model[kpro6-sglang]", outcome="failed", verdicts=[verdict])])
    seen: list[str] = []

    def counting(text, extra=()):
        seen.append(text)
        return text

    for module in [m for name, m in sys.modules.items() if name.startswith("llmval") and m is not None]:
        if getattr(module, "redact", None) is contract.redact and module is not contract:
            monkeypatch.setattr(module, "redact", counting)  # every module that imported it by name
    monkeypatch.setattr(contract, "redact", counting)
    assert status_module.redact is counting
    doc = build_status(results, load_inventory(KPRO6))
    render_markdown(doc), render_html(doc, results, tmp_path), json.dumps(document_of(results))
    assert seen, "the inventory's declared text is redacted as it is shown"
    assert not [text for text in seen if verdict.observed in text or verdict.evidence in text]


PLANTED = '''
from llmval.core.errors import LlmvalError


def test_broken_in_could_not_check_words(expect):
    expect("localhost", "selftest.words.broken", expected="the fan spins",
           observed="could not check (CommandTimeout): the fan", ok=False)


def test_could_not_check_in_mismatch_words():
    raise LlmvalError("[localhost] selftest.words.unmade\\n  expected: 4\\n  observed: 3")


def test_plain_assert_in_both_words():
    assert False, "could not check (HostUnreachable)\\n  expected: 4\\n  observed: 3"
'''


def test_a_run_classifies_each_failure_by_its_type_in_every_report(pytester):
    result = run_with(pytester, PLANTED, INVENTORIES / "report-blockers.toml")
    result.assert_outcomes(passed=1, failed=2, errors=1)
    reports = pytester.path / "reports"
    tests = {t["nodeid"].split("::")[-1]: t for t in json.loads((reports / "results.json").read_text())["tests"]}
    assert tests["test_broken_in_could_not_check_words"]["outcome"] == "failed"
    assert tests["test_could_not_check_in_mismatch_words"]["outcome"] == "error"
    plain = tests["test_plain_assert_in_both_words"]
    assert plain["outcome"] == "failed" and plain["verdicts"] == []
    assert plain["crash"] == "AssertionError: could not check (HostUnreachable)"
    cases = {c.get("name"): c for c in ET.parse(reports / "junit.xml").getroot().iter("testcase")}
    assert cases["test_broken_in_could_not_check_words"].find("failure") is not None
    assert cases["test_could_not_check_in_mismatch_words"].find("error").get("type") == "LlmvalError"
    assert cases["test_plain_assert_in_both_words"].find("failure") is not None
    failing = _failing((reports / "partial" / "status.md").read_text())  # a part of the contract
    assert "❌ `selftest.words.broken` on localhost: expected the fan spins, observed could not check" in failing
    assert "⚠️ `test_could_not_check_in_mismatch_words`" in failing
    assert "❌ `test_plain_assert_in_both_words`" in failing
    assert Cause.COULD_NOT_CHECK.value in {v["cause"] for t in tests.values() for v in t["verdicts"]}
