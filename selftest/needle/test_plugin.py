"""The NIAH plugin end to end: a REAL recorded run on the local engine, replayed offline.

Replaying the recording must give the live run's verdicts, one junit test case per cell (ids name
endpoint, length and depth), a progress line per cell, and the grid JSON and heatmap in reports/.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from selftest.plugin.test_options import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
DATA = ROOT / "selftest" / "needle" / "data"
INVENTORY = DATA / "niah-small.toml"
RECORDING = DATA / "replay-niah-small-real"


def _verdicts(results_json: Path) -> dict[str, str]:
    return {t["nodeid"]: t["outcome"] for t in json.loads(results_json.read_text())["tests"]}


@pytest.mark.skipif(not (RECORDING / "results-live.json").exists(), reason="no committed NIAH recording")
def test_recorded_niah_grid_replays_with_the_live_verdicts(pytester):
    result = run_contract(pytester, "-p", "no:xdist", "-m", "accuracy", "-k", "niah or needle",
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
