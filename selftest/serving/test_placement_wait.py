"""A vLLM under Ray that waits for its placement group is named as such on the Sparks, end to end (issue 44.7).

The Spark deployment (inventories/spark.toml: vLLM in Docker, Ray across two GB10 nodes, TP=2) replayed from a
SYNTHESIZED recording built here: the API server never listens (vLLM binds its port only once its engine is up: every
request is refused), the engine log's error read (`log_command(..., errors=True)`, the one window that keeps both the
error lines and the placement-group lines) answers what vLLM's ray_utils.py prints while Ray cannot give the GPUs
(selftest/engines/test_issue44_logs.py `PLACEMENT`, with the `ValueError` vLLM raises after PG_WAIT_TIMEOUT in its
record form), `ray status` answers Ray's v2 autoscaler summary (`Total Usage:` / `Pending Demands:`, as in the REAL
H200 recording's after/ray-status.txt) with every GPU reserved by another placement group, and `ray list nodes` its
State API table form (`Table:` then tabulate's `plain` rows). Node ids, times and addresses are invented.
"""

from __future__ import annotations

import json
import sys

import pytest

from llmval.hostfacts import log_command
from llmval.hostfacts.ray import RAY_NODES_DOCKER, RAY_STATUS_DOCKER
from selftest.engines.test_issue44_logs import PLACEMENT, RAY_PREFIX
from selftest.strategies import ROOT

pytestmark = pytest.mark.subprocess
pytest_plugins = ["pytester"]
INVENTORY = ROOT / "inventories" / "spark.toml"
LOG = "file:/var/log/llmval/vllm-serve.log"  # the inventory's `logs` of spark-vllm
CONTAINER = "vllm-qwen35"  # its [hosts.ray] run_in
# After PG_WAIT_TIMEOUT vLLM gives up with this ValueError (ray_utils.py `_wait_until_pg_ready`), a traceback before it
TIMED_OUT = [RAY_PREFIX.format("ERROR", 59, 231) + "EngineCore failed to start.",
             RAY_PREFIX.format("ERROR", 59, 231) + "Traceback (most recent call last):",
             RAY_PREFIX.format("ERROR", 59, 231) + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/'
                                                   'executor/ray_utils.py", line 221, in _wait_until_pg_ready',
             RAY_PREFIX.format("ERROR", 59, 231) + "ValueError: Cannot provide a placement group of "
             "placement_group_specs=[{'GPU': 1.0}, {'GPU': 1.0}] within 1800 seconds. See `ray status` and "
             "`ray list nodes` to make sure the cluster has enough resources."]
RAY_STATUS = """======== Autoscaler status: 2026-12-06 11:12:30.000000 ========
Node status
---------------------------------------------------------------
Active:
 1 node_1bef71c0a8e34d2b9f5d6e7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e
 1 node_9c2d55e1f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/40.0 CPU
 2.0/2.0 GPU (2.0 used of 2.0 reserved in placement groups)
 0B/200.00GiB memory
 0B/60.00GiB object_store_memory

From request_resources:
 (none)
Pending Demands:
 {'GPU': 1.0} * 2 (PACK): 1+ pending placement groups
"""
RAY_NODES_TABLE = """
======== List: 2026-12-06 11:12:31.000000 ========
Stats:
------------------------------
Total: 2

Table:
------------------------------
    NODE_ID                                                   NODE_IP        IS_HEAD_NODE    STATE    NODE_NAME      RESOURCES_TOTAL
 0  1bef71c0a8e34d2b9f5d6e7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e  192.168.200.1  True            ALIVE    192.168.200.1  CPU: 20.0
                                                                                                                     GPU: 1.0
 1  9c2d55e1f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1  192.168.200.2  False           ALIVE    192.168.200.2  CPU: 20.0
                                                                                                                     GPU: 1.0
"""  # noqa: E501 (the table's rows are as wide as Ray prints them)


def _command(host: str, command, stdout: str) -> dict:
    return {"host": host, "command": str(command), "rc": 0, "stdout": stdout, "stderr": "", "duration_s": 0.01,
            "timed_out": False}


def _refused(method: str, path: str) -> dict:
    return {"method": method, "url": f"http://10.1.230.180:8000{path}", "request_body_sha256":
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "request_body": "", "status": 0,
            "headers": [], "body_b64": "", "elapsed_s": 0.001,
            "error": "ConnectError('[Errno 111] Connection refused')"}


def _recording(folder, error_lines: list[str]):
    folder.mkdir()
    (folder / "README.md").write_text("SYNTHESIZED by selftest/serving/test_placement_wait.py (its docstring).\n")
    commands = [_command("spark1", log_command(LOG, errors=True), "".join(line + "\n" for line in error_lines)),
                _command("spark1", RAY_STATUS_DOCKER.render(name=CONTAINER), RAY_STATUS),
                _command("spark1", RAY_NODES_DOCKER.render(name=CONTAINER), RAY_NODES_TABLE)]
    commands += [_command(host, "uname -a", f"Linux {host} 6.11.0-1016-nvidia #16-Ubuntu SMP aarch64 GNU/Linux\n")
                 for host in ("spark1", "spark2")]
    (folder / "commands-synth.jsonl").write_text("".join(json.dumps(c) + "\n" for c in commands))
    http = [_refused("GET", path) for path in ("/health", "/v1/models", "/version", "/metrics")]
    (folder / "http-synth.jsonl").write_text("".join(json.dumps(h) + "\n" for h in http))
    return folder


def _replay(pytester, folder) -> dict[str, dict]:
    pytester.chdir()
    pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                 str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests"), "-m", "smoke",
                 "-p", "no:xdist", "--inventory", str(INVENTORY), "--replay", str(folder), timeout=300)
    results = json.loads((pytester.path / "reports" / "results.json").read_text())
    return {(v["check"], v["target"]): v for t in results["tests"] for v in t.get("verdicts", [])}


def test_a_spark_vllm_waiting_for_its_placement_group_is_named_as_serving_health_s_cause(pytester):
    """The engine never came up: serving.health's evidence names the placement-group wait first (Ray's refusal, the
    most telling line) and quotes the last error apart from it; hosts.ray judges the table form of `ray list nodes`
    (2 ALIVE with a GPU) and says from `ray status` that every GPU is reserved and what waits for them."""
    verdicts = _replay(pytester, _recording(pytester.path / "recording", PLACEMENT + TIMED_OUT))
    health = verdicts[("serving.health", "spark-vllm")]
    assert health["evidence"].startswith("it waits for GPUs Ray does not give (its placement group): "), health
    assert "ValueError: Cannot provide a placement group of placement_group_specs" in \
        health["evidence"].split("; ", 1)[0], health
    assert "EngineCore failed to start." in health["evidence"], health  # the error lines, quoted after the cause
    assert "Connection refused" in health["observed"], health
    ray = verdicts[("hosts.ray.alive_gpu_nodes", "spark1")]  # the head: the inventory's [hosts.ray]
    assert ray["cause"] == "held" and ray["observed"] == "2: ['192.168.200.1', '192.168.200.2']", ray
    assert "2.0/2.0 GPU (2.0 used of 2.0 reserved in placement groups) (every GPU in use or reserved)" in \
        ray["evidence"], ray
    assert "demands no node meets: [\"{'GPU': 1.0} * 2 (PACK): 1+ pending placement groups\"]" in \
        ray["evidence"], ray  # Ray's v2 `Pending Demands:` (read as no demand before)


def test_a_wait_alone_is_the_cause_and_no_placement_line_is_quoted_as_an_error(pytester):
    """Only the wait (vLLM still retrying, no error yet): the cause is the latest wait line, and the evidence says
    the log holds no error line rather than quoting an INFO placement line as the engine's last error."""
    verdicts = _replay(pytester, _recording(pytester.path / "recording", PLACEMENT))
    health = verdicts[("serving.health", "spark-vllm")]
    cause, _, rest = health["evidence"].partition("; ")
    assert "Waiting for creating a placement group of specs for 10 seconds" in cause, health
    assert "placement group" not in rest and "holds no error line since its last start" in rest, health
