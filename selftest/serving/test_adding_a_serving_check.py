"""The "Adding a serving check" walk-through (docs/adding-a-serving-check.md), done for real on a copy of the
repository.

Its steps (the `expect.engine_version` field with the check that judges it, the contract test, `make schema`) are
applied to the copy; then the copy runs what CI runs for such a change: the inventory self-tests (schema current,
fuzzer over the seeds) and the no-green-by-omission tests (every field judged or a setting, every judging check
emitted, declared facts without a verdict listed). Exactly the files the page names change (two written, one
generated). Before the walk-through is done, CI fails where it should: the field test names the missing `JudgedBy`
when the field leaves it out, and the schema test names `make schema` until the last step. Then the contract runs on
the SYNTHESIZED kpro6 serving replay (SGLang 0.5.10.post1) with the field declared: held at that version, broken at
another, the expected and observed versions in the verdict.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from selftest.strategies import ROOT
from selftest.walkthrough import Step, copy_repo, documented_steps, make_in, pytest_in, run_in, snapshot, touched

pytestmark = pytest.mark.subprocess  # a copy of the repository, and CI's self-tests and the contract run on it

KPRO6 = ROOT / "inventories" / "kpro6.toml"
FIELD_ANCHOR = '        JudgedBy("serving.parallel.executor_backend")] = None\n'
"""The last field of ServingExpect: the new field goes after it."""
GENERATED = {"inventories/inventory.schema.json"}
CI_SELFTESTS = [  # what `make selftest` runs that reads the declared fields, their checks and the schema
    "selftest/inventory",
    "selftest/report/test_verdict.py::test_every_inventory_field_is_a_judged_fact_or_a_setting",
    "selftest/report/test_verdict.py::test_every_judging_check_is_one_a_check_emits",
    "selftest/report/test_verdict.py::test_declared_facts_without_a_verdict_are_listed",
]
SCHEMA_TEST = "selftest/inventory/test_inventory.py::test_committed_json_schema_is_current"
FIELDS_TEST = "selftest/report/test_verdict.py::test_every_inventory_field_is_a_judged_fact_or_a_setting"
MARK = 'Annotated[Label | None, JudgedBy("serving.engine.version_pinned")]'


def _write(repo, step, existing) -> None:
    target = repo / step.target
    if step.target in existing:  # an existing module: the block is a field added to ServingExpect
        text = target.read_text()
        assert text.count(FIELD_ANCHOR) == 1, f"{step.target}: ServingExpect's last field is not {FIELD_ANCHOR!r}"
        target.write_text(text.replace(FIELD_ANCHOR, FIELD_ANCHOR + step.code, 1))
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(step.code)


def _contract(repo, tmp_path, version: str) -> dict:
    inventory = tmp_path / f"kpro6-{version}.toml"
    text = KPRO6.read_text()
    assert text.count("[endpoints.expect]\n") == 1
    inventory.write_text(text.replace("[endpoints.expect]\n", f'[endpoints.expect]\nengine_version = "{version}"\n'))
    reports = tmp_path / f"reports-{version}"
    ran = pytest_in(repo, "--reports", str(reports), "--inventory", str(inventory),
                    "--replay", str(repo / "selftest/data/replays/hosts/SYNTHESIZED-kpro6-healthy"),
                    "--replay", str(repo / "selftest/data/replays/SYNTHESIZED-kpro6-sglang-healthy"),
                    "tests/serving/test_engine_version.py")
    tests = json.loads((reports / "results.json").read_text())["tests"]
    assert len(tests) == 1, ran.tail()
    return tests[0]


def test_docs_walkthrough_adds_an_engine_version_check_that_ci_accepts(tmp_path):
    steps = documented_steps("Adding a serving check")
    written = [s for s in steps if not s.is_command]
    commands = [s for s in steps if s.is_command]
    assert [s.target for s in commands] == ["make schema"] and len(written) == 2
    repo = copy_repo(tmp_path)
    before = snapshot(repo)

    field_step, test_step = written
    assert MARK in field_step.code
    unjudged = Step(field_step.target, field_step.code.replace(MARK, "Label | None"))
    for step in (unjudged, test_step):
        _write(repo, step, before)
    # what CI says before the walk-through is done: the field is judged by nothing, the schema is stale
    early = pytest_in(repo, SCHEMA_TEST, FIELDS_TEST)
    assert early.rc == 1 and "2 failed" in early.output, early.tail()
    assert "run `make schema`" in early.output, early.tail()
    assert "endpoints.expect.engine_version: mark it with the checks judging it" in early.output, early.tail()
    (repo / field_step.target).write_text((ROOT / field_step.target).read_text())
    _write(repo, field_step, before)
    for step in commands:
        ran = make_in(repo, shlex.split(step.target)[1])
        assert ran.rc == 0, ran.tail()

    changed = touched(before, snapshot(repo))
    assert changed == {s.target for s in written} | GENERATED, sorted(changed)
    assert len(changed) == 3 and not any(p.startswith("fixtures/") for p in changed)

    lint = run_in(repo, sys.executable, "-m", "ruff", "check", *(s.target for s in written))
    assert lint.rc == 0, lint.tail()
    ci = pytest_in(repo, *CI_SELFTESTS, timeout_s=600)
    assert ci.rc == 0 and " passed" in ci.output and " failed" not in ci.output, ci.tail()

    held = _contract(repo, tmp_path, "0.5.10.post1")
    assert held["outcome"] == "passed", held
    broken = _contract(repo, tmp_path, "0.5.9")
    assert broken["outcome"] == "failed", broken
    assert "serving.engine.version_pinned" in broken["message"], broken["message"]
    assert "0.5.9" in broken["message"] and "0.5.10.post1" in broken["message"], broken["message"]
