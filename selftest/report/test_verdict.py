"""The typed verdict end to end: root cause first, junit for CI, exit codes, no green by omission.

Pure parts (llmval.core.verdict, llmval.report.exitcodes, the status model) are tested directly; the pytest wiring runs
the contract in a subprocess (pytester) on the REAL wrong-model recording and on planted test modules.
The exit-code table of docs/failures.md names the tests here.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from llmval.core.errors import HostUnreachable, LlmvalError
from llmval.core.verdict import Cause, could_not_check, make_verdict
from llmval.inventory import AgenticSpec, EndpointSpec, HostSpec, Inventory, NiahSpec, PerfSpec, load_inventory
from llmval.report import build_status, render_markdown
from llmval.report.exitcodes import ExitCode, run_exit_code
from llmval.report.judged import FACTS, SETTINGS, field_paths, not_judged
from llmval.report.junit import junit_names
from llmval.report.results import RunResults, TestResult
from selftest.contract import run_contract
from selftest.report.runs import INVENTORIES, run_with
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
WRONG_MODEL = ROOT / "selftest" / "data" / "replays" / "REAL-local-fault-wrong-model"
SERVING_SMOKE = ("-m", "smoke and serving", "-p", "no:xdist")


def _test(nodeid: str, outcome: str, *verdicts) -> TestResult:
    return TestResult(nodeid=nodeid, outcome=outcome, verdicts=list(verdicts))


def test_verdict_values_are_text_and_secrets_are_redacted():
    verdict = make_verdict("h", "hosts.gpu.count", expected=4, observed=[1, 2], held=False,
                           hint="token=abcdefgh1234", evidence="x")
    assert (verdict.expected, verdict.observed, verdict.cause) == ("4", "[1, 2]", Cause.BROKEN)
    assert "abcdefgh1234" not in verdict.hint
    assert verdict.summary() == "hosts.gpu.count [h] observed [1, 2] (expected 4)"


def test_could_not_check_joins_the_errors_own_dependency():
    verdict = could_not_check("h", "test_x", HostUnreachable("h", "true", "ssh: no route"), depends_on=("a.b",))
    assert verdict.cause == Cause.COULD_NOT_CHECK and verdict.error == "HostUnreachable"
    assert verdict.depends_on == ("a.b", "hosts.reachable")


def test_root_failure_comes_first_with_its_dependents_under_it():
    kpro6 = load_inventory(ROOT / "inventories" / "kpro6.toml")
    dependent = could_not_check("ep", "test_generation", LlmvalError("no such model"), depends_on=("serving.model.id",))
    results = RunResults(deployment="kpro6", exitstatus=1, tests=[
        _test("t::test_generation[ep]", "error", dependent),
        _test("t::test_other[ep2]", "error", could_not_check("ep2", "test_other", LlmvalError("timeout"))),
        _test("t::test_model[ep]", "failed", make_verdict("ep", "serving.model.id", expected="a", observed="b",
                                                         held=False, depends_on=("serving.health",))),
    ])
    doc = build_status(results, kpro6)
    assert [r.verdict.check for r in doc.roots] == ["serving.model.id", "test_other"]
    assert [d.verdict.check for d in doc.roots[0].dependents] == ["test_generation"]
    failing = render_markdown(doc).split("### Failing")[1].split("### Blocked")[0]
    assert failing.index("`serving.model.id` on ep") < failing.index("1 check could not run because") \
        < failing.index("`test_generation` on ep") < failing.index("`test_other` on ep2")


@pytest.mark.parametrize(("outcomes", "pytest_status", "not_judged", "code"), [
    (["passed", "skipped"], 0, 0, ExitCode.GREEN),
    (["passed", "failed", "error"], 1, 0, ExitCode.CONTRACT_BROKEN),
    (["passed", "error"], 1, 0, ExitCode.COULD_NOT_CHECK),
    (["skipped", "skipped"], 0, 0, ExitCode.NOTHING_CHECKED),
    ([], 5, 0, ExitCode.NOTHING_CHECKED),
    (["passed"], 0, 3, ExitCode.NOT_JUDGED),
    (["passed"], 4, 0, ExitCode.USAGE),
    (["passed"], 2, 0, ExitCode.INTERRUPTED),
], ids=["green", "broken-beats-error", "could-not-check", "all-skipped", "none-collected", "not-judged", "usage",
        "collection-error"])
def test_exit_code_names_the_kind_of_not_green(outcomes, pytest_status, not_judged, code):
    tests = [_test(f"t::x{i}", o) for i, o in enumerate(outcomes)]
    assert run_exit_code(tests, pytest_status, not_judged=not_judged) == code


def test_junit_names_follow_pytest():
    assert junit_names("tests/serving/test_model.py::test_x[local-vllm-8343]") == (
        "tests.serving.test_model", "test_x[local-vllm-8343]")


def test_wrong_model_replay_puts_serving_model_id_first_and_junit_carries_the_verdict(pytester, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")  # room for the -ra line's message
    result = run_contract(pytester, *SERVING_SMOKE, "--inventory",
                          str(INVENTORIES / "serving-fault-wrong-model.toml"), "--replay", str(WRONG_MODEL), "-rfE")
    assert result.ret == ExitCode.CONTRACT_BROKEN
    result.stdout.fnmatch_lines(["FAILED *test_served_model_matches_inventory* - serving.model.id "
                                 "[[]local-vllm-8343[]] observed [[]'glm-4.7-flash'[]] (expected [[]'smollm2'[]])"])
    reports = pytester.path / "reports"
    failing = (reports / "replay" / "partial" / "status.md").read_text().split("### Failing")[1].split("### Blocked")[0]
    items = [line for line in failing.splitlines() if line.startswith("- ")]
    assert items[0].startswith("- ❌ `serving.model.id` on local-vllm-8343"), failing
    assert "4 checks could not run because `serving.model.id` failed:" in failing
    assert len(items) == 1, failing  # the four ModelNotServed errors are under it, not beside it
    result.stdout.fnmatch_lines(["*llmval: 1 root cause(s)*", "BROKEN serving.model.id [[]local-vllm-8343[]]*",
                                 "*4 check(s) could not run because serving.model.id failed*"])
    suite = ET.parse(reports / "junit.xml").getroot().find("testsuite")
    assert suite.get("name") == "serving-fault-wrong-model"
    suite_props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert suite_props["mode"] == "replay" and suite_props["engine.local-vllm-8343"].startswith("vllm 0.")
    assert suite_props["inventory"].endswith("serving-fault-wrong-model.toml")
    case = suite.find("testcase[@name='test_served_model_matches_inventory[local-vllm-8343]']")
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert props == {"host": "local-vllm-8343", "check": "serving.model.id", "expected": "['smollm2']",
                     "observed": "['glm-4.7-flash']", "hint": props["hint"]} and "docker ps" in props["hint"]
    assert case.find("failure").get("message").startswith("serving.model.id [local-vllm-8343] observed ['glm")
    errored = suite.find("testcase[@name='test_context_length_matches_inventory[local-vllm-8343]']")
    assert errored.find("failure") is None and errored.find("error").get("type") == "ModelNotServed"
    assert (suite.get("failures"), suite.get("errors")) == ("1", "4")
    document = json.loads((reports / "results.json").read_text())
    assert document["counts"]["failed"] == 1 and document["counts"]["error"] == 4
    assert document["causes"]["broken"] == 1 and document["causes"]["could-not-check"] == 4


COULD_NOT = '''
from llmval.core.errors import HostUnreachable


def test_probe_cannot_reach(expect):
    raise HostUnreachable("gpu-node-01", "true", "ssh: connect to host gpu-node-01 port 22: No route to host")
'''
ALL_SKIPPED = '''
import pytest


def test_nothing_here():
    pytest.skip("nothing declared")
'''
TYPO = '''
import pytest


@pytest.mark.needs("gpu")
def test_gpu_count(host):
    pass
'''


def test_could_not_check_is_an_error_with_its_own_exit_code(pytester):
    result = run_with(pytester, COULD_NOT, INVENTORIES / "report-blockers.toml")
    assert result.ret == ExitCode.COULD_NOT_CHECK
    result.assert_outcomes(passed=1, errors=1)
    junit = ET.parse(pytester.path / "reports" / "junit.xml").getroot()
    case = junit.find(".//testcase[@name='test_probe_cannot_reach']")
    assert case.find("error").get("type") == "HostUnreachable" and case.find("failure") is None
    assert "exit status 10 (could not check)" in result.stdout.str()


def test_nothing_checked_is_not_green_and_exits_5(pytester):
    result = run_with(pytester, ALL_SKIPPED, INVENTORIES / "report-blockers.toml", "-k", "nothing_here")
    assert result.ret == ExitCode.NOTHING_CHECKED
    assert "Verdict: **RED**" in (pytester.path / "reports" / "partial" / "status.md").read_text()  # -k: partial


def test_needs_typo_is_a_collection_error_not_a_skip(pytester):
    result = run_with(pytester, TYPO, INVENTORIES / "report-blockers.toml")
    assert result.ret == ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*needs('gpu') names no field of HostSpec; valid: [[]*'gpus'*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("listing", ["--fixtures", "--collect-only", "--markers"])
def test_listing_runs_write_no_status_or_history(pytester, listing):
    run_contract(pytester, "--inventory", str(INVENTORIES / "report-blockers.toml"), listing)
    reports = pytester.path / "reports"
    assert not (reports / "status.md").exists() and not (reports / "history").exists()
    assert not (reports / "junit.xml").exists()


@pytest.mark.parametrize(("section", "model"), [("hosts", HostSpec), ("endpoints", EndpointSpec),
                                                ("perf", PerfSpec), ("niah", NiahSpec), ("agentic", AgenticSpec)])
def test_every_inventory_field_is_a_judged_fact_or_a_setting(section, model):
    target_sections = set(Inventory.model_fields) - {"deployment", "launch", "decisions", "blockers", "hints",
                                                     "schema_"}
    assert set(FACTS) == set(SETTINGS) == target_sections
    def covered(path: str, keys) -> bool:
        return any(path == k or path.startswith(k + ".") for k in keys)

    for path in field_paths(model):
        assert covered(path, FACTS[section]) != covered(path, SETTINGS[section]), \
            f"{section}.{path}: " + (
                "name the checks judging it on its host fact (`@fact(..., checks=...)` in llmval.hostfacts) or add it "
                "to llmval.report.judged SETTINGS" if section == "hosts"
                else "mark it with the checks judging it (`Annotated[..., JudgedBy(check)]` in llmval.inventory) or "
                     "add it to llmval.report.judged SETTINGS" if section in ("endpoints", "perf")
                else "name it with its checks in the grid kind's GridKind.facts or its settings")


def _emitted(check: str, sources: str) -> bool:
    """A check id (or glob) some contract test, fixture or module passes to `expect`: as a literal, a glob's
    literal stem, or an f-string whose literal part is a dotted parent of it (`f"serving.speculative.{name}"`)."""
    if "*" in check:
        return f'"{check.split("*")[0]}' in sources
    parts = check.split(".")
    return f'"{check}"' in sources or any(f'"{".".join(parts[:i])}.{{' in sources for i in range(1, len(parts)))


def test_every_judging_check_is_one_a_check_emits():
    """A check id declared to judge a field (a host fact's `checks=`, an inventory field's `JudgedBy`) that no check
    emits would leave that field unjudged in every run: a typo there is a run that is never GREEN."""
    sources = "\n".join(p.read_text() for folder in ("tests", "fixtures", "src/llmval") for p in (ROOT / folder).rglob(
        "*.py") if p.name != "judged.py" and not {"hostfacts", "inventory"} & set(p.parts))  # where ids are declared
    missing = [(section, field, check) for section, fields in FACTS.items() for field, checks in fields.items()
               for check in checks if not _emitted(check, sources)]
    assert missing == []


def test_declared_facts_without_a_verdict_are_listed():
    kpro6 = load_inventory(ROOT / "inventories" / "kpro6.toml")
    host = next(h.name for h in kpro6.hosts if h.gpus)
    verdicts = [make_verdict(host, "hosts.gpu.count", expected=4, observed=4, held=True),
                could_not_check(host, "hosts.gpu.name", LlmvalError("timeout"))]
    missing = {(u.target, u.field) for u in not_judged(kpro6, verdicts)}
    assert (host, "gpus.count") not in missing
    assert (host, "gpus.name") in missing  # could not check judged nothing
    assert (kpro6.endpoints[0].name, "model") in missing
