"""The "Adding a host check" walk-through (docs/adding-a-host-check.md), done for real on a copy of the repository.

Its steps (the ECC fact with its parser and judging check, the inventory field, the contract test, the new
command's answer, `make schema`) are applied to the copy; then the copy runs what CI runs for such a change:
the inventory self-tests (schema current, fuzzer over the seeds), the no-green-by-omission tests (every field
judged or a setting, every judging check emitted), the read-only and command-path self-tests over every
declared command and recording, the two seed host replays, and the contract on a replay of a host that
declares the field. Exactly the files the page names change (four written, one generated). Before the
walk-through is done, CI fails where it should: the field test names the missing `checks=` when the fact leaves
it out, the read-only test names the command without a recorded answer, and the schema test names
`make schema` until the last step.

The replay is REAL-h200x2 plus the walk-through's SYNTHESIZED answer for the new command (GPU 1 shows 2
uncorrected errors), merged by a second `--replay`.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from selftest.strategies import ROOT
from selftest.walkthrough import Step, copy_repo, documented_steps, make_in, pytest_in, run_in, snapshot, touched

from ._contract import INVENTORIES, REPLAYS

pytestmark = pytest.mark.subprocess  # a copy of the repository, and CI's self-tests run on it

FIELD_ANCHOR = "    count: int = Field(ge=0, le=1024)\n"
GENERATED = {"inventories/inventory.schema.json"}
CI_SELFTESTS = [  # what `make selftest` runs that reads the declared facts, fields, commands, recordings and schema
    "selftest/inventory",
    "selftest/report/test_verdict.py::test_every_inventory_field_is_a_judged_fact_or_a_setting",
    "selftest/report/test_verdict.py::test_every_judging_check_is_one_a_check_emits",
    "selftest/report/test_verdict.py::test_declared_facts_without_a_verdict_are_listed",
    "selftest/hosts/test_readonly.py",
    "selftest/hosts/test_command_path.py",
    "selftest/hosts/test_replays.py::test_healthy_replay_passes",
]
SCHEMA_TEST = "selftest/inventory/test_inventory.py::test_committed_json_schema_is_current"
FIELDS_TEST = CI_SELFTESTS[1]
USED_TEST = "selftest/hosts/test_readonly.py::test_every_declared_command_is_used_by_some_recording_or_live_self_test"


def _write(repo, step, existing) -> None:
    target = repo / step.target
    if step.target in existing:  # an existing module: the block is a field added to GpuSpec
        text = target.read_text()
        assert FIELD_ANCHOR in text, f"{step.target} has no GpuSpec.count line to add the field after"
        target.write_text(text.replace(FIELD_ANCHOR, FIELD_ANCHOR + step.code, 1))
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(step.code)


def test_readme_walkthrough_adds_an_ecc_check_that_ci_accepts(tmp_path):
    steps = documented_steps("Adding a host check")
    written = [s for s in steps if not s.is_command]
    commands = [s for s in steps if s.is_command]
    assert [s.target for s in commands] == ["make schema"] and len(written) == 4
    repo = copy_repo(tmp_path)
    before = snapshot(repo)

    fact_step = written[0]
    assert ', checks="hosts.gpu.ecc_uncorrected")' in fact_step.code
    unjudged = Step(fact_step.target, fact_step.code.replace(', checks="hosts.gpu.ecc_uncorrected")', ")"))
    answer = next(s for s in written if s.target.endswith(".jsonl"))
    for step in [unjudged, *(s for s in written[1:] if s is not answer)]:
        _write(repo, step, before)
    # what CI says before the walk-through is done: the field is judged by nothing, the new command has no
    # recorded answer, the schema is stale
    early = pytest_in(repo, SCHEMA_TEST, FIELDS_TEST, USED_TEST)
    assert early.rc == 1 and "3 failed" in early.output, early.tail()
    assert "run `make schema`" in early.output and "hosts.gpus.ecc_uncorrected_max: name the checks" in early.output
    assert "'gpu-ecc'" in early.output, early.tail()
    for step in (fact_step, answer):
        _write(repo, step, before)
    for step in commands:
        ran = make_in(repo, shlex.split(step.target)[1])
        assert ran.rc == 0, ran.tail()

    changed = touched(before, snapshot(repo))
    assert changed == {s.target for s in written} | GENERATED, sorted(changed)
    assert not any(p.startswith("fixtures/") for p in changed)  # the copy runs the checkout's fixtures/

    lint = run_in(repo, sys.executable, "-m", "ruff", "check", *(s.target for s in written if s.target.endswith(".py")))
    assert lint.rc == 0, lint.tail()
    ci = pytest_in(repo, *CI_SELFTESTS, timeout_s=600)
    assert ci.rc == 0, ci.tail()
    assert " passed" in ci.output and " failed" not in ci.output, ci.tail()

    inventory = tmp_path / "h200x2-ecc.toml"
    inventory.write_text((INVENTORIES / "h200x2.toml").read_text()
                         .replace("[hosts.gpus]\n", "[hosts.gpus]\necc_uncorrected_max = 0\n", 1))
    contract = pytest_in(repo, "--reports", str(tmp_path / "reports"), "--inventory", str(inventory),
                         "--replay", str(repo / REPLAYS.relative_to(ROOT) / "REAL-h200x2"),
                         "--replay", str((repo / answer.target).parent), "tests/hosts")
    tests = {t["nodeid"].split("::")[-1]: t for t in
             json.loads((tmp_path / "reports" / "results.json").read_text())["tests"]}
    verdict = tests["test_gpu_ecc_uncorrected_within_limit[h200]"]
    assert verdict["outcome"] == "failed", contract.tail()
    assert "hosts.gpu.ecc_uncorrected" in verdict["message"] and "{1: 2}" in verdict["message"]
    failed = {n for n, t in tests.items() if t["outcome"] == "failed"}
    assert failed == {"test_gpu_ecc_uncorrected_within_limit[h200]", "test_no_stray_gpu_processes[h200]"}, \
        contract.tail()  # the stray python3 is real (see REAL-h200x2's README)
