"""Issue 43.1: a run that is not GREEN always names at least one root cause, in status.md, report.html and
results.json (the terminal prints the same list: selftest/plugin/test_root_cause_pages.py), whatever its verdicts'
dependencies hold; and check dependencies are a DAG, refused where they would close a cycle.

Properties over every results document shipped in selftest/data (REAL recordings and SYNTHESIZED ones), over every
exit status, and over generated results whose dependencies form cycles (as documents written before dependencies
were a DAG can)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmval.core.dependencies import CheckGraph, DependencyCycle
from llmval.core.verdict import Cause, Verdict
from llmval.inventory import load_inventory
from llmval.report import build_status, render_html, render_markdown, root_cause_records, root_causes
from llmval.report.exitcodes import ExitCode, run_exit_code
from llmval.report.results import BlockerRecord, RunResults, TestResult, parse_results, upgrade_document
from selftest.strategies import ROOT

DOCUMENTS = sorted(p for p in (ROOT / "selftest" / "data").rglob("*.json") if p.name.startswith("results"))


@pytest.fixture(scope="module")
def inventory():
    return load_inventory(ROOT / "inventories" / "kpro6.toml")


def _pages(results: RunResults, inventory) -> tuple[object, str, str]:
    doc = build_status(results, inventory)
    return doc, render_markdown(doc), render_html(doc, results, ROOT / "no-such-reports-folder")


def assert_root_cause_everywhere(results: RunResults, inventory) -> None:
    """The rule: not GREEN -> a root cause first in status.md, in report.html's box, in results.json's records."""
    doc, markdown, page = _pages(results, inventory)
    if results.exitstatus == ExitCode.GREEN:
        assert doc.roots == []
        return
    assert doc.roots, "a run that is not GREEN with no root cause"
    first = doc.roots[0].verdict.check
    assert markdown.split("\n## ")[1].startswith("What broke"), markdown[:600]  # the first section, under the verdict
    broke = markdown.split("## What broke")[1].split("\n## ")[0]
    assert first in broke
    assert "nothing failing" not in markdown and "nothing: every check holds" not in markdown
    assert 'class="broke red"' in page and first in page.split('class="broke red"')[1].split("</div>")[0]
    records = root_cause_records(doc.roots)
    assert records and records[0].check == first
    assert all(r.hint.strip() for r in records), [r.check for r in records if not r.hint.strip()]  # with its fix
    assert "fix: " in broke.split("\n- ")[1], broke[:600]
    assert json.loads(RunResults.model_validate(results.model_dump() | {"root_causes": records})
                      .model_dump_json())["root_causes"][0]["check"] == first


def test_every_shipped_results_document_names_its_root_causes(inventory):
    assert len(DOCUMENTS) >= 30, DOCUMENTS
    red = 0
    for path in DOCUMENTS:
        results = parse_results(upgrade_document(json.loads(path.read_text())))
        red += results.exitstatus != 0
        assert_root_cause_everywhere(results, inventory)
    assert red >= 10  # the fault recordings are among them


@pytest.mark.parametrize("code", [c for c in ExitCode if c != ExitCode.GREEN])
def test_every_exit_status_without_a_failed_test_has_a_run_level_root_cause(inventory, code):
    tests = [TestResult(nodeid="tests/serving/test_health.py::test_health_answers_200[ep]", outcome="passed",
                        verdicts=[Verdict(target="ep", check="serving.health", expected="200", observed="200",
                                          cause=Cause.HELD)]),
             TestResult(nodeid="tests/hosts/test_nccl.py::test_nccl[h]", outcome="skipped",
                        skip_reason="no host in the inventory declares nccl")]
    results = RunResults(deployment="kpro6", exitstatus=int(code), tests=tests, not_judged=["hosts[0].gpus.count"],
                         problems=["the recording is incomplete: disk full"] if code == ExitCode.USAGE else [])
    assert_root_cause_everywhere(results, inventory)
    root = root_causes(results)[0]
    assert root.verdict.check.startswith("run.") and root.verdict.observed and root.verdict.hint
    if code == ExitCode.USAGE:
        assert "disk full" in root.verdict.observed
    if code == ExitCode.NOT_JUDGED:
        assert "hosts[0].gpus.count" in root.verdict.observed


def test_a_lifted_blocker_alone_is_a_root_cause(inventory):
    lifted = TestResult(nodeid="t::test_p2p[h]", outcome="failed", blockers=[
        BlockerRecord(id="kpro6-p2p", check="hosts.nccl.p2p", target="h", state="lifted", observed="P2P on")])
    results = RunResults(deployment="kpro6", exitstatus=1, tests=[lifted])
    assert_root_cause_everywhere(results, inventory)
    assert "kpro6-p2p" in root_causes(results)[0].verdict.observed


CHECKS = ["serving.ready", "serving.health", "serving.model.id", "hosts.ready", "hosts.reachable", "x.y"]
TARGETS = ["ep", "h", "ep-2"]


@st.composite
def runs(draw):
    """Results of up to 8 tests whose verdicts fail or hold and depend on any checks, cycles included."""
    tests = []
    for n in range(draw(st.integers(1, 8))):
        outcome = draw(st.sampled_from(["passed", "failed", "error", "skipped", "xfailed"]))
        check, target = draw(st.sampled_from(CHECKS)), draw(st.sampled_from(TARGETS))
        deps = tuple(f"{c}@{t}" if t else c for c, t in draw(st.lists(
            st.tuples(st.sampled_from(CHECKS), st.sampled_from([*TARGETS, ""])), max_size=3)))
        cause = {"passed": Cause.HELD, "failed": Cause.BROKEN, "error": Cause.COULD_NOT_CHECK,
                 "xfailed": Cause.BLOCKED}.get(outcome)
        verdicts = [Verdict(target=target, check=check, observed=draw(st.sampled_from(["down", "refused", "x"])),
                            cause=cause, depends_on=deps, error="NotReady" if cause == Cause.COULD_NOT_CHECK else "")
                    ] if cause is not None and draw(st.booleans() | st.just(True)) else []
        tests.append(TestResult(nodeid=f"t::test_{n}[{target}]", outcome=outcome, verdicts=verdicts))
    return RunResults(deployment="d", exitstatus=int(run_exit_code(tests, 0)), tests=tests)


@settings(deadline=None)
@given(runs())
def test_every_failure_is_a_root_or_under_exactly_one_even_when_dependencies_cycle(results):
    roots = root_causes(results)
    failing = [t.nodeid for t in results.tests if t.outcome in {"failed", "error"}]
    assert bool(roots) == (results.exitstatus != 0)
    if failing:
        placed = [f.test.nodeid for r in roots for f in (*r.members, *r.dependents)]
        assert sorted(placed) == sorted(failing)


def test_the_graph_refuses_an_edge_that_closes_a_cycle_and_names_it():
    graph = CheckGraph()
    graph.declare("serving.health", ["serving.ready"], strict=True)
    graph.declare("serving.model.id", ["serving.health@ep"], strict=True)
    with pytest.raises(DependencyCycle) as refused:
        graph.declare("serving.ready", ["serving.model.id"], strict=True, where="declared by t::test_ready")
    assert refused.value.cycle == ["serving.ready", "serving.model.id", "serving.health", "serving.ready"]
    assert "serving.ready -> serving.model.id -> serving.health -> serving.ready" in str(refused.value)
    assert "declared by t::test_ready" in str(refused.value)
    # at run time the edge is left out of the verdict, and kept to be reported
    assert graph.declare("serving.ready", ["serving.model.id", "hosts.ready@h"]) == ("hosts.ready@h",)
    assert graph.refused == [("serving.ready", "serving.model.id")] and graph.is_acyclic()
    assert graph.declare("serving.health", ["serving.health"]) == ()  # on itself: means nothing, dropped
    # on itself on a named target (a container's readiness on its node's): kept in the verdict, no edge
    assert graph.declare("hosts.ready", ["hosts.ready@node"], strict=True) == ("hosts.ready@node",)
    assert "hosts.ready" not in graph.edges() and graph.is_acyclic()


def test_a_container_not_ready_folds_under_its_node_not_ready(inventory):
    """One fault (the node down), one root: the container's `hosts.ready` names `hosts.ready@node`; a check never
    folds under itself on its own target, nor under the same check on a target it does not name."""
    def ready(target, deps=()):
        return TestResult(nodeid=f"t::test_host_ready[{target}]", outcome="failed", verdicts=[
            Verdict(target=target, check="hosts.ready", expected="answers", observed="refused", cause=Cause.BROKEN,
                    depends_on=deps)])
    results = RunResults(deployment="kpro6", exitstatus=1, tests=[
        ready("node-ct", ("hosts.ready@node",)), ready("node"), ready("other"),
        ready("self", ("hosts.ready@self",))])
    roots = root_causes(results)
    assert [r.verdict.target for r in roots] == ["node", "other", "self"]
    assert [d.test.nodeid for d in roots[0].dependents] == ["t::test_host_ready[node-ct]"]
    assert_root_cause_everywhere(results, inventory)


@settings(deadline=None)
@given(st.lists(st.tuples(st.sampled_from(CHECKS), st.lists(st.sampled_from(CHECKS), max_size=3)), max_size=20))
def test_whatever_is_declared_the_graph_stays_acyclic(declarations):
    graph = CheckGraph()
    for check, deps in declarations:
        kept = graph.declare(check, deps)
        assert set(kept) | {d for c, d in graph.refused if c == check} >= set(deps) - {check}
    assert graph.is_acyclic()


def test_a_module_that_did_not_collect_is_a_root_cause_beside_a_failed_check(inventory):
    failed = TestResult(nodeid="t::test_health[ep]", outcome="failed", verdicts=[
        Verdict(target="ep", check="serving.health", expected="200", observed="refused", cause=Cause.BROKEN)])
    results = RunResults(deployment="kpro6", exitstatus=2, tests=[failed],
                         problems=["tests/hosts/test_x.py did not collect: NameError: name 'y' is not defined"])
    assert [r.verdict.check for r in root_causes(results)] == ["serving.health", "run.exit"]
    assert "did not collect" in render_markdown(build_status(results, inventory)).split("## Goal")[0]
