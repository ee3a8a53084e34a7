"""Issue 43.1's rules as properties over every shipped recording REPLAYED, not only over the results documents they
left (selftest/report/test_root_causes.py): each recording in selftest/data (REAL and SYNTHESIZED, smoke and hosts)
replayed through the contract with `-m smoke` gives a run whose check dependencies form no cycle, and which, unless
GREEN, names a root cause first in the terminal, status.md, report.html and results.json, the same one on every page,
each root cause with its fix, every failing test placed once (a root cause or under one) and counts that add up.

A recording added to selftest/data without an inventory here fails `test_every_recording_is_replayed_here`."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path

import pytest

from llmval.core.dependencies import CheckGraph, check_of
from selftest.contract import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.subprocess, pytest.mark.slow]
DATA = ROOT / "selftest" / "data"
INVENTORIES = ROOT / "inventories"
TEST_INVENTORIES = DATA / "inventories"
RECORDINGS = sorted({p.parent for pattern in ("commands*.jsonl", "http*.jsonl") for p in DATA.rglob(pattern)})


def inventory_of(recording: Path) -> Path:
    """The inventory a recording was made with: its own inventory.toml, else the one its README names."""
    if (recording / "inventory.toml").is_file():
        return recording / "inventory.toml"
    name = recording.name
    if name.startswith("REAL-local-fault-"):
        return TEST_INVENTORIES / f"serving-fault-{name.removeprefix('REAL-local-fault-')}.toml"
    if name.startswith("REAL-local-cpu-"):  # scripts/gpu/run.sh's dry run on this machine (their READMEs)
        return TEST_INVENTORIES / "gpu-scripts-dry-run-cpu.toml"
    if name.startswith("SYNTHESIZED-"):
        return INVENTORIES / f"{name.split('-')[1]}.toml"
    if name.startswith("REAL-h200x2") or recording.parent.name == "h200x2-health":
        return TEST_INVENTORIES / "h200x2.toml"
    return {"REAL-local-spec-smoke": INVENTORIES / "local-spec.toml",
            "local-smoke-real": INVENTORIES / "local.toml"}.get(name, recording / "inventory.toml")


def test_every_recording_is_replayed_here():
    assert len(RECORDINGS) >= 50, RECORDINGS
    missing = [str(r.relative_to(DATA)) for r in RECORDINGS if not inventory_of(r).is_file()]
    assert not missing, f"recordings with no inventory to replay them with: {missing}"


def _pages(result, reports: Path) -> tuple[str, str, str, dict]:
    """The terminal, status.md, report.html and results.json of one run (status and page where it said)."""
    out = result.stdout.str()
    said = re.search(r"^llmval status \([^)]*\): (\S+) · (\S+)$", out, re.M)
    assert said, out[-3000:]
    return (out, Path(said.group(1)).read_text(), Path(said.group(2)).read_text(),
            json.loads((reports / "results.json").read_text()))


def assert_dag(results: dict) -> None:
    """The dependencies the run's verdicts carry form no cycle among checks (a check on itself on another target,
    a container's readiness on its node's, is no edge: llmval.core.dependencies)."""
    graph = CheckGraph()
    for test in results["tests"]:
        for verdict in test.get("verdicts", []):
            graph.declare(verdict["check"], [d for d in verdict["depends_on"] if check_of(d) != verdict["check"]],
                          strict=True, where=test["nodeid"])
    assert graph.is_acyclic()


def assert_root_cause_first_on_every_page(ret: int, out: str, status: str, page: str, results: dict) -> None:
    roots = results["root_causes"]
    counts = results["counts"]
    assert results["exitstatus"] == ret and sum(counts.values()) == len(results["tests"]), counts
    verdict_line = next(line for line in status.splitlines() if line.startswith("Verdict: "))
    for outcome, n in counts.items():
        word = {"failed": "failed", "error": "could not check", "xfailed": "xfailed"}.get(outcome, outcome)
        assert f"{n} {word}" in verdict_line, (verdict_line, counts)
    if ret == 0:
        assert roots == [] and "root cause(s)" not in out and "## Nothing broke" in status
        return
    assert roots, "a run that is not GREEN with no root cause"
    first = roots[0]
    assert status.split("\n## ")[1].startswith("What broke"), status[:800]
    broke = status.split("## What broke")[1].split("\n## ")[0]
    box = page.split('class="broke red"')[1].split("</div>")[0]
    block = out.split(f"llmval: {len(roots)} root cause(s), what each explains under it")[1]
    head, *lines = block.lstrip("- \n").splitlines()
    first_block = "\n".join([head, *[line for line in lines[:next(
        (n for n, line in enumerate(lines) if line.startswith(("BROKEN ", "COULD NOT CHECK ", "("))), len(lines))]]])
    if "one cause" in head:  # a shared cause: its words head every page
        assert first["observed"].splitlines()[0][:60] in head and "one cause" in broke.split("\n- ")[1], head
    else:
        assert head.split(" [")[0].endswith(first["check"]), (head, first["check"])
        assert f"`{first['check']}`" in broke.split("\n- ")[1], broke[:800]
        assert f"<code>{first['check']}</code>" in box or first["check"] in box, box[:800]
    assert "nothing failing" not in status and "every check holds" not in status
    for root in roots:  # a cause of several lines is printed line by line, never joined by a literal backslash-n
        for field in (root["observed"], root["hint"]):
            lines = [line.strip() for line in field.splitlines() if line.strip()]
            assert not any(f"{a[-20:]}\\n{b[:20]}" in out for a, b in pairwise(lines)), field
    assert all(r["hint"].strip() for r in roots), [r["check"] for r in roots if not r["hint"].strip()]
    assert "fix: " in broke.split("\n- ")[1] and "fix: " in first_block, (broke[:800], first_block)
    failing = {t["nodeid"] for t in results["tests"] if t["outcome"] in ("failed", "error")}
    placed = [n for r in roots for n in (r["test"], *r["explains"])]
    lifted = {t["nodeid"] for t in results["tests"] for b in t.get("blockers", []) if b["state"] == "lifted"}
    assert len(placed) == len(set(placed)) and (failing - lifted) <= set(placed), (failing, placed)


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: str(p.relative_to(DATA)))
def test_a_replayed_recording_has_a_dag_and_a_root_cause_first_on_every_page(pytester, recording):
    result = run_contract(pytester, "-m", "smoke", "-p", "no:xdist", "-p", "no:randomly",
                          f"--inventory={inventory_of(recording)}", f"--replay={recording}")
    assert result.ret in (0, 1, 10), result.stdout.str()[-3000:]  # judged (GREEN, RED or could not check)
    out, status, page, results = _pages(result, pytester.path / "reports")
    assert_dag(results)
    assert_root_cause_first_on_every_page(result.ret, out, status, page, results)
