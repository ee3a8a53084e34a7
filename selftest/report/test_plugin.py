"""Known blockers as strict xfail, the reports every contract run writes, and no secret in any of them.

Each test runs the contract in a subprocess (pytester): `tests/hosts/test_reachable.py` (so it is a contract
run) plus a small planted test module that states verdicts through `expect`, with an inventory from
`selftest/data/inventories/`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from selftest.report.runs import INVENTORIES, run_with
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]


BLOCKED = '''
def test_p2p_still_blocked(expect):
    expect("gpu-node-01", "selftest.nccl.p2p", expected="P2P channels", observed="via SHM/direct/direct")


def test_p2p_on_a_host_the_blocker_does_not_name(expect):
    expect("other-node", "selftest.nccl.p2p", expected="P2P channels", observed="via SHM/direct/direct")
'''
LIFTED = '''
def test_p2p_now_works(expect):
    expect("gpu-node-02", "selftest.nccl.p2p", expected="P2P channels", observed="P2P channels")
'''


def _results(pytester: pytest.Pytester) -> dict[str, dict]:
    document = json.loads((pytester.path / "reports" / "results.json").read_text())
    return {t["nodeid"].split("::")[-1]: t for t in document["tests"]}


def test_declared_blocker_that_still_fails_is_xfail(pytester):
    result = run_with(pytester, BLOCKED, INVENTORIES / "report-blockers.toml")
    result.assert_outcomes(passed=1, xfailed=1, failed=1)
    result.stdout.fnmatch_lines(["*XFAIL*test_p2p_still_blocked*known blocker gpu-p2p*"])
    tests = _results(pytester)
    assert tests["test_p2p_still_blocked"]["outcome"] == "xfailed"
    assert tests["test_p2p_still_blocked"]["blockers"][0] | {"observed": ""} == {
        "id": "gpu-p2p", "check": "selftest.nccl.p2p", "target": "gpu-node-01", "state": "holds", "observed": ""}
    assert tests["test_p2p_on_a_host_the_blocker_does_not_name"]["outcome"] == "failed"
    status = (pytester.path / "reports" / "partial" / "status.md").read_text()  # a partial run
    assert "⛔ **gpu-p2p**" in status and "still holds: `selftest.nccl.p2p` on gpu-node-01" in status


def test_declared_blocker_that_passes_turns_the_run_red(pytester):
    result = run_with(pytester, LIFTED, INVENTORIES / "report-blockers.toml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*[[]XPASS(strict)[]] blocker lifted: revisit p2p-disabled (NCCL_P2P_DISABLE=1, permanently)*",
        "*[[]gpu-node-02[]] selftest.nccl.p2p now passes*",
    ])
    test = _results(pytester)["test_p2p_now_works"]
    assert test["outcome"] == "failed" and test["blockers"][0]["state"] == "lifted"
    status = (pytester.path / "reports" / "partial" / "status.md").read_text()  # a partial run
    assert "Verdict: **RED**" in status
    assert "🔓 **gpu-p2p**" in status and "LIFTED: `selftest.nccl.p2p` on gpu-node-02 now passes" in status
    assert "🔓 Revisit decision **p2p-disabled**" in status


def test_runxfail_leaves_blocked_checks_failing(pytester):
    result = run_with(pytester, BLOCKED, INVENTORIES / "report-blockers.toml", "--runxfail")
    result.assert_outcomes(passed=1, failed=2)


def test_blocker_revisiting_an_unknown_decision_is_a_usage_error(pytester):
    text = (INVENTORIES / "report-blockers.toml").read_text().replace('revisit = "p2p-disabled"',
                                                                       'revisit = "p2p-disabld"')
    bad = pytester.path / "typo.toml"
    bad.write_text(text)
    result = run_with(pytester, LIFTED, bad)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "blockers[0:gpu-p2p].revisit: 'p2p-disabld' is not a decision id; decisions: ['p2p-disabled']" in (
        result.stderr.str())


PLANTED = {
    # caught by name (…KEY…, …PASSWORD…) and by the inventory's references
    "LLMVAL_SELFTEST_API_KEY": "sk-plantedApiKey0123456789abcdef",
    "LLMVAL_SELFTEST_SSH_PASSWORD": "planted-ssh-Pa55word!",
    # a name that looks harmless: only the inventory's api_key_env reference marks it secret
    "LLMVAL_SELFTEST_AUTH": "plantedAuthValue-7f3c9e",
}
LEAKY = '''
import logging
import os


def test_leaks_through_every_channel(expect):
    key, password, auth = (os.environ[n] for n in
                           ("LLMVAL_SELFTEST_API_KEY", "LLMVAL_SELFTEST_SSH_PASSWORD", "LLMVAL_SELFTEST_AUTH"))
    print("stdout:", key, password, auth)
    logging.getLogger("leak").warning("log: %s %s %s", key, password, auth)
    expect.measure("localhost", "leak-" + auth, "value " + password + key, auth)
    expect("localhost", "selftest.secrets.leak", expected=auth, observed=password + " " + key,
           hint="hint " + auth, evidence="password=" + password + " Authorization: Bearer " + auth)


def test_plain_assert_leaks(expect):
    expect("localhost", "selftest.secrets.ok", expected=1, observed=1)
    assert os.environ["LLMVAL_SELFTEST_AUTH"] == "guess", os.environ["LLMVAL_SELFTEST_SSH_PASSWORD"]
'''


def test_planted_secrets_never_reach_any_report(pytester, monkeypatch):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    html = pytester.path / "reports" / "pytest.html"
    result = run_with(pytester, LEAKY, INVENTORIES / "report-secrets.toml", "-k", "localhost or leak",
                      "--html", str(html), "--self-contained-html", "-o", "junit_logging=all", "-rA")
    result.assert_outcomes(passed=1, failed=2)
    reports = sorted(p for p in (pytester.path / "reports").rglob("*") if p.is_file())
    names = {p.name for p in reports}
    assert {"results.json", "status.md", "report.html", "junit.xml", "pytest.html"} <= names, names
    leaks = [(p.name, name) for p in reports for name, value in PLANTED.items()
             if value in p.read_text(encoding="utf-8", errors="replace")]
    assert not leaks, f"secrets in reports: {leaks}"
    junit = (pytester.path / "reports" / "junit.xml").read_text()
    assert "***" in junit and "stdout:" in junit, "the leaky test did not run as planted"
    snapshot = json.loads((pytester.path / "reports" / "results.json").read_text())["inventory_snapshot"]
    assert snapshot["endpoints"][0]["api_key_env"] == "LLMVAL_SELFTEST_AUTH"  # the reference stays, not the value


@pytest.mark.engine
def test_two_runs_on_the_engine_diff_a_renamed_model_and_a_raised_gate(pytester, live_engine):
    """On the real local engine (read-only /v1/models): run 1 as declared; run 2 with the served model
    renamed and a perf gate raised in the inventory. The second status.md lists both and the broken verdict."""
    local = live_engine
    first = run_model_checks(pytester, local)
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()[-3000:]
    edited = pytester.path / "local-edited.toml"
    text = local.read_text()
    assert 'model = "smollm2"' in text and "decode_tok_s_c1_min = " in text
    text = text.replace('model = "smollm2"', 'model = "smollm2-renamed"')
    text = re.sub(r"decode_tok_s_c1_min = [0-9.]+", "decode_tok_s_c1_min = 100000", text)
    edited.write_text(text)
    second = run_model_checks(pytester, edited)
    assert second.ret == pytest.ExitCode.TESTS_FAILED
    status = (pytester.path / "reports" / "partial" / "status.md").read_text()  # a partial run
    assert "endpoints[local-vllm].model: smollm2 → smollm2-renamed (served model renamed)" in status
    assert re.search(r"perf\[local-vllm\]\.decode_tok_s_c1_min: [0-9.]+ → 100000(\.0)? \(gate raised\)", status)
    assert "passed → failed (broke)" in status
    assert "❌ `serving.model.id` on local-vllm: expected ['smollm2-renamed'], observed ['smollm2']" in status


def run_model_checks(pytester: pytest.Pytester, inventory: Path) -> pytest.RunResult:
    pytester.chdir()
    return pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "--inventory", str(inventory),
                        "--reports", str(pytester.path / "reports"), str(ROOT / "tests" / "serving" / "test_model.py"),
                        timeout=300)


def test_tests_matched_by_a_blocker_glob_are_marked_blocker(pytester):
    result = run_with(pytester, BLOCKED + LIFTED, INVENTORIES / "report-blockers.toml", "-m", "blocker")
    result.assert_outcomes(xfailed=1, failed=2)
    assert "1 deselected" in result.stdout.str()  # the reachability test is not a blocker's
