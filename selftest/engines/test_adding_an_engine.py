"""The "Adding an engine" walk-through (docs/adding-an-engine.md), done for real on a copy of the repository.

Its steps (TensorRT-LLM's adapter module, its self-test, `make schema`) are applied to the copy; then the copy runs
what CI runs for such a change: the registry self-tests (registry = inventory choices = schema enum = `init` and
CLI choices, no engine-name comparison outside the adapters), the new self-test, the inventory self-tests (schema
current) and `llmval init` for every platform (the new one included). Exactly the files the page names change
(two written, one generated), and before `make schema` the schema self-test fails naming it.
"""

from __future__ import annotations

import shlex
import sys

import pytest

from selftest.walkthrough import copy_repo, documented_steps, make_in, pytest_in, run_in, snapshot, touched

pytestmark = pytest.mark.subprocess  # a copy of the repository, and CI's self-tests run on it
GENERATED = {"inventories/inventory.schema.json"}
SCHEMA_TEST = "selftest/inventory/test_inventory.py::test_committed_json_schema_is_current"


def test_readme_walkthrough_adds_an_engine_that_ci_accepts(tmp_path):
    steps = documented_steps("Adding an engine")
    written = [s for s in steps if not s.is_command]
    commands = [s for s in steps if s.is_command]
    assert [s.target for s in commands] == ["make schema"] and len(written) == 2
    repo = copy_repo(tmp_path)
    before = snapshot(repo)
    for step in written:
        assert step.target not in before
        (repo / step.target).write_text(step.code)

    stale = pytest_in(repo, SCHEMA_TEST)
    assert stale.rc == 1 and "run `make schema`" in stale.output, stale.tail()
    for step in commands:
        ran = make_in(repo, shlex.split(step.target)[1])
        assert ran.rc == 0, ran.tail()
    changed = touched(before, snapshot(repo))
    assert changed == {s.target for s in written} | GENERATED, sorted(changed)

    lint = run_in(repo, sys.executable, "-m", "ruff", "check", *(s.target for s in written))
    assert lint.rc == 0, lint.tail()
    kinds = run_in(repo, sys.executable, "-c", "from llmval.engines import ADAPTERS; print(list(ADAPTERS))")
    assert kinds.output.strip() == "['sglang', 'trtllm', 'vllm', 'openai']", kinds.tail()
    new_test = next(s.target for s in written if s.target.startswith("selftest/"))
    ci = pytest_in(repo, "-rA", "selftest/engines/test_registry.py", new_test, "selftest/inventory",
                   "selftest/snapshot/test_init.py", timeout_s=600)
    assert ci.rc == 0 and " passed" in ci.output, ci.tail()
    passed = {line.split()[1] for line in ci.output.splitlines() if line.startswith("PASSED ")}
    assert "selftest/snapshot/test_init.py::test_init_writes_a_valid_inventory_and_its_runners[trtllm]" in passed
    assert f"{new_test}::test_trtllm_serve_is_detected_with_its_version_and_health" in passed
