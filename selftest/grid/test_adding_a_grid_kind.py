"""A third grid kind needs only its declaration: the walk-through, done for real in a copy of the repository.

The blocks below add a kind `recall` (its module with its cells, runner and `GridKind` declaration, one entry in
the registry, its `[[recall]]` inventory section, its contract test) to a copy; the grid plugin
(fixtures/grids.py), the session, the gates and the reports are not touched, and the new kind's cells and gates run
end to end: ids, smoke marks, xfail above `all_pass_up_to`, the shared gates, the grid JSON and heatmap, the
judged-facts list.

The `recall` kind is an OFFLINE STAND-IN: its runner asks no server (a cell "recalls" when its length is at most
2048 tokens), so the test proves the wiring, not any model's accuracy. Its section reuses `NiahSpec`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from selftest.strategies import ROOT

pytestmark = pytest.mark.subprocess  # a copy of the repository, and the contract run on it
COPIED = ("src", "fixtures", "tests", "conftest.py", "pyproject.toml")
KIND = '''"""OFFLINE STAND-IN grid kind (the walk-through's): a cell recalls when its length is at most 2048 tokens."""

from __future__ import annotations

import dataclasses

from .grid import GridCells, GridKind, context_lengths, grid_name, pass_gates


@dataclasses.dataclass(frozen=True)
class RecallCell:
    grid: str
    length: int
    depth: float

    @property
    def id(self) -> str:
        return f"{self.grid}-{self.length}-d{round(self.depth * 100)}-recall"


@dataclasses.dataclass
class RecallResult:
    cell: RecallCell
    error: str | None = None
    recalled: bool = False

    @property
    def is_pass(self) -> bool:
        return self.error is None and self.recalled


def plan_cells(spec, max_model_len):
    return [RecallCell(grid_name(spec), length, depth)
            for length in context_lengths("recall", spec, max_model_len) for depth in sorted(spec.depths)]


class RecallRunner(GridCells):
    kind = label = "recall"
    check_prefix = "accuracy.recall"

    def _result(self, cell, error=None):
        return RecallResult(cell, error)

    def _fill(self, cell, result):
        result.recalled = cell.length <= 2048

    def _line(self, result, took_s):
        return "pass" if result.is_pass else "MISS"

    def judge(self, results):
        return pass_gates(self.spec, results, self.check_prefix)

    def document(self):
        measured = [self.results[c.id] for c in self.cells if c.id in self.results]
        complete = len(measured) == len(self.cells)
        passed = sum(r.is_pass for r in measured)
        return {"artefact": "recall", "title": "Recall", "grid": grid_name(self.spec), **self._document_head(complete),
                "panels": [["plain", "number"]],
                "cells": [{"id": r.cell.id, "variant": "plain", "kind": "number", "length": r.cell.length,
                           "depth": r.cell.depth, "is_pass": r.is_pass, "pass_rate": float(r.is_pass),
                           "error": r.error, "trials": [{}]} for r in measured],
                "summary": {"cells": len(self.cells), "measured": len(measured), "passed": passed,
                            "pass_rate": passed / len(measured) if measured else None},
                "gates": [dataclasses.asdict(v) for v in self.judge(measured)] if complete else None}


RECALL = GridKind(
    name="recall", section="recall", plan_cells=plan_cells,
    make_runner=lambda spec, endpoint, client, progress: RecallRunner(
        spec, endpoint, plan_cells(spec, endpoint.max_model_len), progress),
    facts={"context_lengths": ("accuracy.recall.cell",), "min_overall": ("accuracy.recall.min_overall",),
           "all_pass_up_to": ("accuracy.recall.all_pass_up_to",), "prompt_tokens_tolerance": ("accuracy.recall.x",)},
    settings=frozenset({"endpoint", "name", "depths", "trials", "seed", "variants", "values", "smoke_context_lengths",
                        "max_tokens", "margin_tokens", "budget_s"}),
)
'''
TEST = '''"""The walk-through's recall grid: one test per cell, then the overall gate."""

import pytest

pytestmark = pytest.mark.accuracy


def test_recall_cell(recall_cell, recall_result, recall_spec, expect):
    strict = recall_spec.all_pass_up_to is not None and recall_cell.length <= recall_spec.all_pass_up_to
    if not recall_result.is_pass and not strict:
        pytest.xfail(f"missed above all_pass_up_to={recall_spec.all_pass_up_to}")
    expect(recall_cell.grid, "accuracy.recall.cell", expected="recalled", ok=recall_result.is_pass,
           observed="recalled" if recall_result.is_pass else "missed")


def test_recall_overall(recall_grid, recall_gates, expect):
    verdict = recall_gates["accuracy.recall.min_overall"]
    expect(recall_grid, verdict.check, expected=verdict.expected, observed=verdict.observed, ok=verdict.ok)
'''
STEPS = {  # path: (anchor to insert after, or None for a new file; text)
    "src/llmval/recall.py": (None, KIND),
    "src/llmval/grid_kinds.py": ("GRID_KINDS: tuple[GridKind, ...] = (NIAH, AGENTIC", ", RECALL"),
    "src/llmval/inventory/__init__.py": ("    agentic: list[AgenticSpec] = []\n", "    recall: list[NiahSpec] = []\n"),
    "tests/accuracy/test_recall.py": (None, TEST),
}
REGISTRY_IMPORT = "from .recall import RECALL\n"
INVENTORY = """
[deployment]
name = "recall-walkthrough"
kind = "lab"

[[endpoints]]
name = "ep"
platform = "p"
base_url = "http://127.0.0.1:1"
engine = "vllm"
model = "m"
max_model_len = 8192

[[recall]]
endpoint = "ep"
context_lengths = [1024, 2048, 4096]
depths = [0.5]
smoke_context_lengths = [1024]
all_pass_up_to = 2048
min_overall = 0.5
"""


def _copy(repo: Path) -> None:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, repo / name)


def _apply(repo: Path) -> None:
    for path, (anchor, text) in STEPS.items():
        target = repo / path
        if anchor is None:
            target.write_text(text)
            continue
        source = target.read_text()
        assert source.count(anchor) == 1, f"{path}: anchor {anchor!r} not found once"
        target.write_text(source.replace(anchor, anchor + text, 1))
    registry = repo / "src/llmval/grid_kinds.py"
    text = registry.read_text()
    anchor = "from .needle.kind import NIAH\n"
    assert anchor in text
    registry.write_text(text.replace(anchor, anchor + REGISTRY_IMPORT, 1))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for name in COPIED for p in
            ([root / name] if (root / name).is_file() else (root / name).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p)}


def _run(repo: Path, reports: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-v",
                           "--reports", str(reports), *args], env=env, cwd=repo, capture_output=True, text=True,
                          timeout=300)


def test_a_third_grid_kind_needs_only_its_declaration(tmp_path):
    repo = tmp_path / "repo"
    _copy(repo)
    before = _files(repo)
    _apply(repo)
    after = _files(repo)
    changed = sorted(p for p in after if before.get(p) != after[p])
    assert changed == sorted(STEPS), changed  # the plugin, the session, the gates and the reports: untouched
    assert not any(p.startswith("fixtures/") for p in changed)
    assert not any(p.startswith("src/llmval/grid/") for p in changed)  # what every grid shares: untouched

    inventory = tmp_path / "recall.toml"
    inventory.write_text(INVENTORY)
    reports = tmp_path / "reports"
    collected = _run(repo, reports, "--collect-only", "-q", "-m", "smoke and accuracy", "--inventory",
                     str(inventory), "tests/accuracy/test_recall.py")
    assert "test_recall_cell[ep-1024-d50-recall]" in collected.stdout, collected.stdout[-3000:] + collected.stderr
    assert "ep-2048" not in collected.stdout and "ep-4096" not in collected.stdout  # only smoke lengths in smoke

    run = _run(repo, reports, "--inventory", str(inventory), "tests/accuracy/test_recall.py")
    tests = {t["nodeid"].split("::")[-1]: t for t in json.loads((reports / "results.json").read_text())["tests"]}
    outcomes = {name: t["outcome"] for name, t in tests.items()}
    assert outcomes == {"test_recall_cell[ep-1024-d50-recall]": "passed",
                        "test_recall_cell[ep-2048-d50-recall]": "passed",
                        "test_recall_cell[ep-4096-d50-recall]": "xfailed",
                        "test_recall_overall[ep]": "passed"}, run.stdout[-3000:] + run.stderr[-2000:]
    assert "66.7% (2/3)" in tests["test_recall_overall[ep]"]["message"] or \
        "66.7% (2/3)" in json.dumps(tests["test_recall_overall[ep]"])
    grid = json.loads((reports / "recall-ep.json").read_text())
    assert [c["id"] for c in grid["cells"]] == ["ep-1024-d50-recall", "ep-2048-d50-recall", "ep-4096-d50-recall"]
    assert [g["check"] for g in grid["gates"]] == ["accuracy.recall.all_pass_up_to", "accuracy.recall.min_overall"]
    assert (reports / "recall-ep.png").stat().st_size > 0
    assert "recall ep-4096-d50-recall [3/3]: MISS" in run.stdout  # the shared progress line, under -v
    cases = {c.get("name") for c in ET.parse(reports / "junit.xml").iter("testcase")}
    assert "test_recall_cell[ep-4096-d50-recall]" in cases
