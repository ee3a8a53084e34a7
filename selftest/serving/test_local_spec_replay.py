"""The REAL `pytest --inventory inventories/local-spec.toml -m smoke --launch` run (vLLM on CPU speculating with
n-gram, 4 speculative tokens), recorded and judged again offline: the same verdicts, the speculative checks passed.
The recording's README says when and how it was made."""

from __future__ import annotations

import json
import sys

import pytest

from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
REPLAY = ROOT / "selftest" / "data" / "replays" / "REAL-local-spec-smoke"
SPEC_CHECKS = ("test_speculative_setting_matches[local-vllm-spec-algorithm]",
               "test_speculative_setting_matches[local-vllm-spec-num_steps]",
               "test_acceptance_length_within_range[local-vllm-spec]",
               "test_streamed_chunks_carry_speculated_tokens[local-vllm-spec]")


def _verdicts(path) -> dict[str, str]:
    return {t["nodeid"].split("::")[-1]: t["outcome"] for t in json.loads(path.read_text())["tests"]}


@pytest.mark.skipif(not (REPLAY / "results-live.json").exists(), reason="REAL local-spec smoke not recorded")
def test_real_local_spec_smoke_replays_green_with_the_speculative_checks(pytester):
    live = _verdicts(REPLAY / "results-live.json")
    assert all(live[name] == "passed" for name in SPEC_CHECKS), live
    assert set(live.values()) <= {"passed", "skipped"}, live
    pytester.chdir()  # `--reports reports`: the launch-log command names reports/launch/..., as when recorded
    pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                 str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests"), "-m", "smoke",
                 "-p", "no:xdist", "--inventory", str(ROOT / "inventories" / "local-spec.toml"), "--replay",
                 str(REPLAY), timeout=300)
    replayed = _verdicts(pytester.path / "reports" / "results.json")
    assert {name: replayed.get(name) for name in live} == live
