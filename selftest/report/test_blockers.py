"""Blocker verdicts from a test's typed verdicts (pure logic of fixtures/blockers.py)."""

from __future__ import annotations

from llmval.core.verdict import Verdict, make_verdict
from llmval.inventory import BlockerSpec, DecisionSpec
from llmval.report import judge, lifted_message, reference_problems
from llmval.report.blockers import HOLDS, LIFTED

P2P = BlockerSpec(id="p2p", check="hosts.nccl.p2p", subject="kpro6*", reason="IOMMU", revisit="p2p-off")
DECISION = DecisionSpec(id="p2p-off", decision="NCCL_P2P_DISABLE=1", rationale="FSP needs IOMMU translation")


def rec(check: str, ok: bool, subject: str = "kpro6-ct129") -> Verdict:
    return make_verdict(subject, check, expected="P2P", observed="P2P" if ok else "SHM", held=ok)


def test_failing_blocked_check_holds():
    [verdict] = judge([P2P], [rec("hosts.gpu.count", True), rec("hosts.nccl.p2p", False)], "t", failed=True)
    assert verdict.state == HOLDS and verdict.blocker.id == "p2p"


def test_only_the_check_that_failed_the_test_counts():
    records = [rec("hosts.nccl.p2p", True), rec("hosts.gpu.count", False)]
    assert judge([P2P], records, "t", failed=True) == []


def test_passing_blocked_check_is_lifted_and_names_the_decision():
    verdicts = judge([P2P], [rec("hosts.nccl.p2p", True)], "t", failed=False)
    assert [v.state for v in verdicts] == [LIFTED]
    message = lifted_message(verdicts, [DECISION])
    assert message.splitlines()[0] == "[XPASS(strict)] blocker lifted: revisit p2p-off (NCCL_P2P_DISABLE=1)"
    assert "[kpro6-ct129] hosts.nccl.p2p now passes" in message


def test_subject_and_test_globs_narrow_a_blocker():
    assert judge([P2P], [rec("hosts.nccl.p2p", False, "spark1")], "t", failed=True) == []
    narrowed = P2P.model_copy(update={"test": "*test_nccl*"})
    assert judge([narrowed], [rec("hosts.nccl.p2p", False)], "tests/hosts/test_gpu.py::x", failed=True) == []
    assert judge([narrowed], [rec("hosts.nccl.p2p", False)], "tests/hosts/test_nccl.py::x", failed=True)
    assert judge([narrowed], [rec("hosts.nccl.p2p", False)], "other::x", failed=True, marked=["p2p"])


def test_check_globs_match():
    wide = P2P.model_copy(update={"check": "serving.tool_calls.large*", "subject": ""})
    assert judge([wide], [rec("serving.tool_calls.large_64kib", False, "ep")], "t", failed=True)


def test_references_must_resolve():
    typo = P2P.model_copy(update={"revisit": "p2p-of"})
    assert reference_problems([typo, typo], [DECISION]) == [
        "blockers 'p2p': revisit 'p2p-of' is not a decision id; decisions: ['p2p-off']",
        "blockers 'p2p': revisit 'p2p-of' is not a decision id; decisions: ['p2p-off']",
        "duplicate blocker ids: ['p2p']"]
