"""Could-not-check causes come grouped: one missing recorded answer is one root cause, with its cells under it.

A full replay of the kpro6 recordings (host + serving, no NIAH, agentic or tool-call answers recorded) used to
print 230 root causes, a progress line per grid cell between pytest's dots and ~1,700 lines; now it prints the
two causes (the recording lacks `POST /tokenize`, it lacks `POST /v1/chat/completions`) with the cells under
each, in about 130 lines.
"""

from __future__ import annotations

import shutil

from llmval.core.errors import LlmvalError, ReplayMiss
from llmval.core.verdict import could_not_check, make_verdict
from llmval.grid import CellNotMeasured
from llmval.inventory import load_inventory
from llmval.report import build_status, render_markdown
from llmval.report.results import RunResults, TestResult
from selftest.contract import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
REPLAYS = ROOT / "selftest" / "data" / "replays"
KPRO6 = ROOT / "inventories" / "kpro6.toml"
MISSING = "the recording /r has no answer for POST http://10.1.2.129:30000/tokenize"


def _cell(test: str, cell: str, reason: str = MISSING) -> TestResult:
    error = CellNotMeasured(f"[ep] NIAH cell {cell}: {reason}", reason=reason)
    return TestResult(nodeid=f"tests/accuracy/test_niah.py::{test}[{cell}]", outcome="error",
                      verdicts=[could_not_check(cell, test, error)])


def test_could_not_check_roots_of_one_reason_are_one_root_cause_with_the_cells_under_it():
    tests = [_cell("test_needle_is_retrieved", f"ep-4096-d{d}") for d in (0, 50, 100)]
    tests.append(_cell("test_niah_overall_pass_rate_meets_gate", "ep"))
    tests.append(_cell("test_needle_is_retrieved", "ep-8192-d0", reason="the grid's time budget was spent"))
    tests.append(TestResult(nodeid="tests/serving/test_reasoning.py::test_reasoning[ep]", outcome="error",
                            verdicts=[could_not_check("ep", "test_reasoning", ReplayMiss(MISSING.replace(
                                "tokenize", "v1/chat/completions")))]))
    broken = [TestResult(nodeid=f"tests/hosts/test_gpus.py::test_count[h{i}]", outcome="failed", verdicts=[
        make_verdict(f"h{i}", "hosts.gpu.count", expected=4, observed=3, held=False)]) for i in (1, 2)]
    doc = build_status(RunResults(deployment="kpro6", exitstatus=1, tests=tests + broken), load_inventory(KPRO6))
    assert [len(r.members) for r in doc.roots] == [1, 1, 4, 1, 1]  # broken first, each its own; then by size
    grouped = doc.roots[2]
    assert grouped.verdict.shared_cause == MISSING and grouped.errors == "CellNotMeasured"
    failing = render_markdown(doc).split("### Failing")[1].split("### Blocked")[0]
    assert f"could not check 4 checks (CellNotMeasured), one cause: {MISSING}" in failing
    assert ("`tests/accuracy/test_niah.py::test_needle_is_retrieved` ×3: `ep-4096-d0`, `ep-4096-d50`, "
            "`ep-4096-d100`") in failing
    assert "the grid's time budget was spent" in failing and "v1/chat/completions" in failing
    assert render_markdown(doc).count("Make 4 checks checkable again") == 1


def test_an_error_without_a_reason_groups_by_what_it_says():
    one = could_not_check("a", "t", LlmvalError("same words"))
    assert one.reason == "" and one.shared_cause == "same words"
    assert make_verdict("a", "c", expected=1, observed=2, held=False).shared_cause == ""


def test_full_kpro6_replay_prints_a_handful_of_grouped_root_causes_and_no_cell_lines(pytester, tmp_path):
    recording = tmp_path / "kpro6-recording"  # the host and the serving recordings of one kpro6 run
    recording.mkdir()
    for source in (REPLAYS / "hosts" / "SYNTHESIZED-kpro6-healthy", REPLAYS / "SYNTHESIZED-kpro6-sglang-healthy"):
        for path in source.glob("*.jsonl"):
            shutil.copy(path, recording / f"{path.stem}-{source.name}.jsonl")
    result = run_contract(pytester, "-p", "no:xdist", f"--inventory={KPRO6}", f"--replay={recording}")
    lines = result.stdout.lines
    assert result.ret == 10, result.stdout.str()[-3000:]  # could not check
    result.stdout.fnmatch_lines(["*llmval: 2 root cause(s)*",
                                 # serving.tokenize's probe shares the cause (ReplayMiss): 231 errors, was 230
                                 "COULD NOT CHECK 2* checks (CellNotMeasured, ReplayMiss), one cause: the recording * "
                                 "has no "
                                 "answer for POST http://10.1.2.129:30000/tokenize",
                                 "    test_needle_is_retrieved ×104: *",
                                 "COULD NOT CHECK 2* checks (ReplayMiss), one cause: *v1/chat/completions",
                                 "*231 errors*"])
    assert not [line for line in lines if line.startswith(("niah kpro6", "agentic kpro6")) and "/" in line
                and "[" in line], "a per-cell progress line without -v"
    assert len(lines) < 200, len(lines)
    assert sum(line.startswith("ERROR ") and "::" in line for line in lines) == 2  # one per root cause; -v shows each
    status = (pytester.path / "reports" / "replay" / "status.md").read_text()
    failing = status.split("### Failing")[1].split("### Blocked")[0]
    assert len([line for line in failing.splitlines() if line.startswith("- ")]) == 2, failing
    assert "kpro6-sglang-8192-d50-signature-stream" in failing  # every cell is listed in the report
