"""The NIAH plugin end to end: a REAL recorded run on the local engine, replayed offline.

Replaying the recording must give the live run's verdicts, one junit test case per cell (ids name
endpoint, length and depth), a progress line per cell, and the grid JSON and heatmap in reports/.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from selftest.contract import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
DATA = ROOT / "selftest" / "needle" / "data"
INVENTORY = DATA / "niah-small.toml"
RECORDING = DATA / "replay-niah-small-real"


def _verdicts(results_json: Path) -> dict[str, str]:
    return {t["nodeid"]: t["outcome"] for t in json.loads(results_json.read_text())["tests"]}


@pytest.mark.skipif(not (RECORDING / "results-live.json").exists(), reason="no committed NIAH recording")
def test_recorded_niah_grid_replays_with_the_live_verdicts(pytester):
    result = run_contract(pytester, "-p", "no:xdist", "-v", "-m", "accuracy", "-k", "niah or needle",
                          "--inventory", str(INVENTORY), "--replay", str(RECORDING))
    reports = pytester.path / "reports"
    assert _verdicts(reports / "results.json") == _verdicts(RECORDING / "results-live.json"), \
        result.stdout.str()[-3000:]
    cases = [c.get("name") for c in ET.parse(reports / "junit.xml").iter("testcase")]
    assert "test_needle_is_retrieved[local-vllm-512-d50]" in cases
    assert "test_needle_is_retrieved[local-vllm-1024-d100-prefix]" in cases
    result.stdout.fnmatch_lines(["*niah local-vllm-512-d0 [[]1/18[]]: *prompt tokens*"])
    grid = json.loads((reports / "niah-local-vllm.json").read_text())
    live = json.loads((RECORDING / "niah-local-vllm.json").read_text())
    assert grid["summary"]["prompts_fingerprint"] == live["summary"]["prompts_fingerprint"]
    assert [c["is_pass"] for c in grid["cells"]] == [c["is_pass"] for c in live["cells"]]
    assert (reports / "niah-local-vllm.png").stat().st_size > 0


SMALL_INVENTORY = """
[deployment]
name = "niah-collect"
kind = "lab"

[[endpoints]]
name = "ep"
platform = "p"
base_url = "http://127.0.0.1:1"
engine = "vllm"
model = "m"
{max_model_len}

[[niah]]
endpoint = "ep"
{niah}
"""


def _inventory(pytester, niah: str, max_model_len: str = "max_model_len = 8192") -> str:
    path = pytester.path / "inv.toml"
    path.write_text(SMALL_INVENTORY.format(niah=niah, max_model_len=max_model_len))
    return str(path)


def test_cells_default_to_a_spread_up_to_max_model_len(pytester):
    result = run_contract(pytester, "-p", "no:xdist", "--collect-only", "-q", "-k", "needle",
                          "--inventory", _inventory(pytester, "depths = [0.5]"))
    result.stdout.fnmatch_lines(["*test_needle_is_retrieved[[]ep-1024-d50[]]", "*[[]ep-8192-d50[]]"])
    assert "ep-16384" not in result.stdout.str()


def test_only_declared_smoke_lengths_run_in_smoke(pytester):
    inventory = _inventory(pytester, "context_lengths = [1024, 4096]\ndepths = [0.0, 1.0]\n"
                                     "smoke_context_lengths = [1024]")
    result = run_contract(pytester, "-p", "no:xdist", "--collect-only", "-q", "-m", "smoke and accuracy", "-k",
                          "needle", "--inventory", inventory)
    out = result.stdout.str()
    assert "[ep-1024-d0]" in out and "[ep-1024-d100]" in out and "ep-4096" not in out, out


def test_a_grid_with_no_length_to_run_is_a_usage_error(pytester):
    result = run_contract(pytester, "-p", "no:xdist", "--collect-only", "-q", "--inventory",
                          _inventory(pytester, "depths = [0.5]", max_model_len=""))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "declare one of them" in output and "Traceback" not in output
