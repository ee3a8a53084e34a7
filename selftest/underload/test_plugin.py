"""The perf plugin's correctness-under-load wiring, in a subprocess run of the real contract (tests/perf) against the
SYNTHESIZED stub: the local inventory's [perf.correctness] measured once for its three tests, a needle lost under
load a broken verdict naming the cells and both answers, a load the server refuses could-not-check, not a pass."""

from __future__ import annotations

import json
import sys
import tomllib

import pytest
import tomli_w

from selftest.strategies import ROOT

from .stub import stub_server, stub_state

pytest_plugins = ["pytester"]


def _run(pytester: pytest.Pytester, state) -> tuple[pytest.RunResult, dict]:
    """The three correctness tests against `state`'s stub: the pytest result and results.json."""
    data = tomllib.loads((ROOT / "inventories" / "local.toml").read_text())
    endpoint = next(e for e in data["endpoints"] if e["name"] == "local-vllm")
    endpoint.pop("logs", None)
    data.pop("launch", None)
    data["perf"][0].update(input_len=8, output_len=20)
    data["perf"][0]["correctness"].update(niah_lengths=[256], hold_timeout_s=3)
    state.model = endpoint["model"]
    with stub_server(state) as base_url:
        endpoint["base_url"] = base_url
        inventory = pytester.path / "stub.toml"
        inventory.write_text(tomli_w.dumps(data))
        pytester.chdir()
        reports = pytester.path / "reports"
        result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir",
                              str(ROOT), "-c", str(ROOT / "pyproject.toml"), "--reports", str(reports),
                              "--inventory", str(inventory), "--perf-lock", str(pytester.path / "perf.lock"),
                              str(ROOT / "tests" / "perf"), "-k", "under_load", timeout=180)
    return result, json.loads((reports / "results.json").read_text())


def test_a_needle_lost_under_load_is_a_broken_verdict_naming_the_cells_and_both_answers(pytester):
    result, results = _run(pytester, stub_state(fault="niah"))
    verdicts = {v["check"]: v for t in results["tests"] for v in t["verdicts"]}
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    assert result.stdout.str().count("correctness under load at C=4") == 1  # one run serves the three tests
    niah = verdicts["perf.correctness.niah"]
    assert niah["cause"] == "broken"
    assert all(f"'niah local-vllm-256-d{d}': \"idle: found " in str(niah["observed"]) for d in (0, 50, 100))
    assert "found 8434633 | under load (C=4): missed: answered 'The special magic number is 8434634." in \
        str(niah["observed"])  # the d0 cell's needle (seed 0), and the stub's answer with its last digit turned
    assert verdicts["perf.correctness.toolcalls.values"]["cause"] == "held"
    assert (pytester.path / "reports" / "perf" / "local-vllm-correctness-c4.json").is_file()


def test_a_load_the_server_refuses_is_could_not_check_for_every_gate(pytester):
    result, results = _run(pytester, stub_state(refuse_load=True))
    assert result.ret == 10, result.stdout.str()[-2000:]  # could not check (llmval.report.exitcodes)
    assert [t["outcome"] for t in results["tests"]] == ["error"] * 3
    assert all("did not reach 4 streams in flight within 3 s" in t["message"] and "HTTP 503" in t["message"]
               for t in results["tests"])
