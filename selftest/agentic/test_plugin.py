"""The agentic plugin end to end: a REAL recorded fault run on the local engine, replayed offline.

The engine served --max-model-len 4096 while the inventory declares 8192. Replaying the recording must give
the live run's verdicts: the 8192-token cells fail naming the context limit (not an xfail, not an error),
the 2048-token cells are measured, and the grid JSON and heatmap are written.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from selftest.contract import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
DATA = ROOT / "selftest" / "agentic" / "data"
INVENTORY = DATA / "agentic-fault.toml"
RECORDING = DATA / "replay-fault-4096-real"


def _verdicts(results_json: Path) -> dict[str, str]:
    return {t["nodeid"]: t["outcome"] for t in json.loads(results_json.read_text())["tests"]}


@pytest.mark.skipif(not (RECORDING / "results-live.json").exists(), reason="no committed agentic recording")
def test_recorded_fault_run_replays_failing_the_long_cells_on_the_context_limit(pytester):
    result = run_contract(pytester, "-p", "no:xdist", "-v", "-m", "accuracy", "-k", "agentic",
                          "--inventory", str(INVENTORY), "--replay", str(RECORDING))
    reports = pytester.path / "reports"
    verdicts = _verdicts(reports / "results.json")
    assert verdicts == _verdicts(RECORDING / "results-live.json"), result.stdout.str()[-3000:]
    long_cells = {k: v for k, v in verdicts.items() if "-8192-" in k}
    assert set(long_cells.values()) == {"failed"} and len(long_cells) == 2
    junit = {c.get("name"): c for c in ET.parse(reports / "junit.xml").iter("testcase")}
    failure = junit["test_agentic_call_carries_the_value[local-vllm-8192-d50-config-stream]"].find("failure")
    assert failure is not None
    assert "accuracy.agentic.context_limit" in failure.get("message", "") + (failure.text or "")
    assert "maximum context length is 4096" in (failure.text or "")
    result.stdout.fnmatch_lines(["*agentic local-vllm-8192-d50-config-nonstream [[]3/4[]]: MISS (context_limit)*"])
    grid = json.loads((reports / "agentic-local-vllm.json").read_text())
    live = json.loads((RECORDING / "agentic-local-vllm.json").read_text())
    assert [(c["id"], c["label"]) for c in grid["cells"]] == [(c["id"], c["label"]) for c in live["cells"]]
    assert (reports / "agentic-local-vllm.png").stat().st_size > 0


SMOKE_INVENTORY = """
[deployment]
name = "agentic-collect"
kind = "lab"

[[endpoints]]
name = "ep"
platform = "p"
base_url = "http://127.0.0.1:1"
engine = "vllm"
model = "m"
max_model_len = 8192

[[agentic]]
endpoint = "ep"
context_lengths = [2048, 4096]
depths = [0.5]
needles = ["config"]
{smoke}
"""


def test_only_declared_smoke_lengths_run_in_smoke(pytester):
    """The one grid plugin marks smoke cells the same way for every kind (NIAH's `smoke_context_lengths`)."""
    inventory = pytester.path / "inv.toml"
    inventory.write_text(SMOKE_INVENTORY.format(smoke="smoke_context_lengths = [2048]"))
    result = run_contract(pytester, "-p", "no:xdist", "--collect-only", "-q", "-m", "smoke and accuracy", "-k",
                          "agentic", "--inventory", str(inventory))
    out = result.stdout.str()
    assert "[ep-2048-d50-config-nonstream]" in out and "[ep-2048-d50-config-stream]" in out, out
    assert "ep-4096" not in out and "test_agentic_calls_are_valid" not in out, out


def test_smoke_lengths_outside_the_grid_are_refused(pytester):
    inventory = pytester.path / "inv.toml"
    inventory.write_text(SMOKE_INVENTORY.format(smoke="smoke_context_lengths = [1024]"))
    result = run_contract(pytester, "-p", "no:xdist", "--collect-only", "-q", "--inventory", str(inventory))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "smoke_context_lengths [1024] are not in context_lengths [2048, 4096]" in output, output[-2000:]
    assert "Traceback" not in output
