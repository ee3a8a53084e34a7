"""Issue 21.3: startup facts count only when the engine log belongs to the server that answers now.

REAL recordings of the GPU scripts' dry run on this machine's CPU engine (selftest/data/replays/REAL-local-cpu-*,
READMEs there): the healthy smoke (the log's `(APIServer pid=9485)` serves port 8357: GREEN), and the same engine
right after `kill -9` of its API server only: the log is still there, the port is closed, and the startup facts
(model dtype, tool-call parser, TP size, KV dtype) are could-not-check naming the dead pid and the closed port,
folded under serving.health. Before, the same kind of run listed the dtype and the parser as passed
(REAL-local-fault-killed/results-live.json, recorded by the code of that day)."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from llmval.core.errors import ReplayMiss
from llmval.engines.serving_process import StaleEvidence, check_log_owner
from llmval.inventory import load_inventory
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
DATA = ROOT / "selftest" / "data"
INVENTORY = DATA / "inventories" / "gpu-scripts-dry-run-cpu.toml"
STARTUP = ("test_model_dtype_matches[h200-vllm]", "test_tool_call_parser_configured[h200-vllm]",
           "test_tensor_parallel_size_matches[h200-vllm]", "test_kv_cache_dtype_proven_by_two_sources[h200-vllm]")
# a real line of the recorded log (REAL-local-cpu-healthy, engine-log read)
LINE = ("(APIServer pid=9485) INFO 12-01 10:34:41 [api_utils.py:286] non-default args: {'enable_auto_tool_choice': "
        "True, 'tool_call_parser': 'hermes', 'host': '127.0.0.1', 'port': 8357}")


def _replay(pytester, name: str) -> dict[str, tuple[str, str]]:
    pytester.chdir()
    pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                 str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests"), "-m", "smoke",
                 "-p", "no:xdist", "--inventory", str(INVENTORY), "--replay", str(DATA / "replays" / name),
                 timeout=300)
    tests = json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]
    return {t["nodeid"].split("::")[-1]: (t["outcome"], t["message"]) for t in tests}


def test_the_healthy_engine_s_log_is_its_own_and_the_smoke_is_green(pytester):
    outcomes = _replay(pytester, "REAL-local-cpu-healthy")
    assert {o for o, _ in outcomes.values()} <= {"passed", "skipped"}, outcomes
    assert all(outcomes[name][0] == "passed" for name in STARTUP), outcomes


def test_the_dead_server_s_log_is_no_evidence_and_folds_under_serving_health(pytester):
    before = {t["nodeid"].split("::")[-1]: t["outcome"] for t in json.loads(
        (DATA / "replays" / "REAL-local-fault-killed" / "results-live.json").read_text())["tests"]}
    assert before["test_model_dtype_matches[local-vllm-8346]"] == "passed"  # the bug, as recorded then
    assert before["test_tool_call_parser_configured[local-vllm-8346]"] == "passed"
    outcomes = _replay(pytester, "REAL-local-cpu-api-server-killed")
    assert outcomes["test_health_answers_200[h200-vllm]"][0] == "failed"
    for name in STARTUP:
        outcome, message = outcomes[name]
        assert outcome == "error", (name, outcome, message)
        assert message.startswith("could not check (StaleEvidence)"), message
        assert "written by the server pid 9485" in message and "nothing listens on port 8357" in message, message
    status = (pytester.path / "reports" / "replay" / "status.md").read_text()
    failing = status.split("### Failing", 1)[1]  # each dependent with its test id (What broke folds check ids)
    health = failing.split("`serving.health` on h200-vllm", 1)[1].split("\n- ", 1)[0]
    assert "checks could not run because `serving.health` failed" in health
    assert all(name.split("[")[0] in health for name in STARTUP), health


class _Facts:
    """What the endpoint's host answers (the real numbers of the dry run), or a recording without these reads."""

    def __init__(self, listening=None, pids=(), rows=None, miss=False):
        self._listening, self._pids, self._rows, self._miss = listening or {}, list(pids), rows or {}, miss

    def listening_ports(self):
        if self._miss:
            raise ReplayMiss("recorded before the ownership reads")
        return self._listening

    def port_pids(self, port):
        return self._pids

    def processes(self, pids):
        return self._rows


def test_a_log_of_an_earlier_server_is_refused_naming_who_serves_now():
    endpoint = load_inventory(INVENTORY).endpoints[0]
    row = SimpleNamespace(ppid=1, args="python3 -m vllm.entrypoints.openai.api_server --port 8357", age_s=12)
    with pytest.raises(StaleEvidence, match=r"written by the server pid 9485, but port 8357 is served by pid 11000 "
                                            r"\(python3 -m vllm"):
        check_log_owner(endpoint, LINE, _Facts({8357: [0]}, [11000], {11000: row}), [9485])
    child = SimpleNamespace(ppid=9485, args="VLLM::APIServer_0", age_s=12)  # several API servers under a launcher
    assert "child of the log's server pid 9485" in check_log_owner(
        endpoint, LINE, _Facts({8357: [0]}, [11000], {11000: child}), [9485])
    assert check_log_owner(endpoint, LINE, _Facts({8357: [0]}, [9485]), [9485]) == \
        "the log's server pid 9485 serves port 8357"
    assert check_log_owner(endpoint, LINE, _Facts(miss=True), [9485]) == ""  # old recordings: as before
