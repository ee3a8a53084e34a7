"""REAL GPU evidence of the Sparks' engine shape: vLLM 0.24.0 (CUDA) under a live two-node Ray 2.60 cluster on one
lent NVIDIA H200 (`--distributed-executor-backend ray`, TP=1; head 127.0.1.1 with the GPU, a second raylet on
127.0.1.2 with none), recorded by scripts/gpu/ray/scenario.sh on 2026-12-02 and replayed through the smoke contract
(selftest/data/replays/REAL-h200-vllm-ray-*, README in each: recorded, not synthesized).

What one machine cannot show (NCCL between nodes over IBext, TP=2 across two GPUs) stays with the SYNTHESIZED
Spark recordings (selftest/data/replays/SYNTHESIZED-spark-vllm-*)."""

from __future__ import annotations

import json

import pytest

from selftest.serving.smoke_replay import replay_smoke, verdicts_of
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.subprocess
REPLAYS = ROOT / "selftest" / "data" / "replays"


def _replay(pytester, name: str) -> dict:
    return replay_smoke(pytester, REPLAYS / f"REAL-h200-vllm-ray-{name}")


@pytest.mark.parametrize("name", ["healthy", "launch"])
def test_the_ray_stack_replays_green_with_every_ray_fact_judged(pytester, name):
    run = _replay(pytester, name)
    assert run["ret"] == 0, [t["nodeid"] for t in run["results"]["tests"] if t["outcome"] != "passed"]
    verdicts = verdicts_of(run["results"])
    assert verdicts["hosts.ray.alive_gpu_nodes"]["observed"].startswith("2: ")
    assert verdicts["serving.parallel.executor_backend"]["observed"] == "ray"
    # the second raylet's log monitor re-forwards the head worker's lines as ip=127.0.1.2 (one machine): not a node
    nodes = verdicts["serving.parallel.nodes"]
    assert nodes["observed"] == "1" and "not counted: 127.0.1.2" in nodes["evidence"], nodes
    assert verdicts["hosts.env.ray_memory_monitor_refresh_ms"]["cause"] == "held"


def test_the_healthy_ray_worker_is_attached_through_its_driver(pytester):
    zombies = verdicts_of(_replay(pytester, "healthy")["results"])["hosts.gpu.zombie_workers"]
    assert zombies["observed"] == "none", zombies
    assert "pid 3686 ray::RayWorkerProc.run: Ray actor RayWorkerProc" in zombies["evidence"]
    assert "its driver pid 2780 (VLLM::EngineCore) is under pid 2555" in zombies["evidence"], zombies["evidence"]


def test_the_teardown_of_the_launched_ray_stack_leaves_nothing():
    result = (REPLAYS / "REAL-h200-vllm-ray-launch" / "result.txt").read_text()
    assert "ray processes after teardown: 0" in result and "GPU compute apps after teardown: 0" in result
    summary = json.loads((REPLAYS / "REAL-h200-vllm-ray-launch" / "launch" / "summary.json").read_text())
    assert summary["teardown_problems"] == [] and summary["leftover_processes"] == []


def test_a_killed_second_raylet_is_one_root_cause_naming_the_dead_node_and_serving_still_judges(pytester):
    run = _replay(pytester, "node-down")
    verdicts = verdicts_of(run["results"])
    node = verdicts["hosts.ray.alive_gpu_nodes"]
    assert node["cause"] == "broken" and "127.0.1.2 DEAD GPU=0 (Unexpected termination: health check failed" in \
        node["observed"], node
    # the second raylet's environment cannot be read: folded under the dead node, not a cause of its own
    env = next(v for t in run["results"]["tests"] for v in t["verdicts"]
               if v["check"] == "hosts.env.ray_memory_monitor_refresh_ms" and v["target"] == "h200-raylet2")
    assert "hosts.ray.alive_gpu_nodes@h200" in env["depends_on"], env
    assert "llmval: 1 root cause(s)" in run["stdout"] and "1 check(s) could not run because " \
        "hosts.ray.alive_gpu_nodes failed: hosts.env.ray_memory_monitor_refresh_ms" in run["stdout"], run["stdout"]
    assert all(verdicts[c]["cause"] == "held" for c in ("serving.health", "serving.generation.tokens",
                                                        "serving.kv_cache.dtype", "serving.parallel.nodes"))


def test_the_memory_monitor_left_on_is_named_on_the_node_that_runs_without_it(pytester):
    run = _replay(pytester, "monitor-on")
    assert run["ret"] == 1
    bad = [(v["check"], v["target"]) for t in run["results"]["tests"] for v in t["verdicts"]
           if v["cause"] not in ("held", "skipped")]
    assert bad == [("hosts.env.ray_memory_monitor_refresh_ms", "h200-raylet2")], bad
    env = next(v for t in run["results"]["tests"] for v in t["verdicts"] if v["target"] == "h200-raylet2"
               and v["check"] == "hosts.env.ray_memory_monitor_refresh_ms")
    assert env["observed"] == "<unset>" and "raylet" in env["evidence"], env


def test_a_killed_ray_worker_is_named_by_the_engines_own_words_and_leaves_no_zombie(pytester):
    verdicts = verdicts_of(_replay(pytester, "worker-kill")["results"])
    health = verdicts["serving.health"]
    assert health["cause"] == "broken"
    assert health["evidence"].startswith("what died, at 12-02 05:16:48: ") and \
        "RayWorkerProc rank=[0] died unexpectedly" in health["evidence"], health
    assert "Found ulimit" not in health["evidence"]  # a startup WARNING 3 minutes before is no last word (43.5)
    # the worker is gone and its engine with it: nothing holds the GPU
    assert verdicts["hosts.gpu.zombie_workers"]["observed"] == "none"
    assert verdicts["hosts.gpu.stray_processes"]["observed"] == "none"


def test_the_killed_api_server_leaves_the_ray_actor_a_zombie_named_with_its_orphaned_driver(pytester):
    run = _replay(pytester, "zombie")
    assert run["ret"] == 1
    zombie = verdicts_of(run["results"])["hosts.gpu.zombie_workers"]
    observed = zombie["observed"]
    assert observed.startswith("pid 19020 ray::RayWorkerProc.run, holds 42.9 GiB (43920 MiB)"), observed
    assert "Ray actor RayWorkerProc vllm_Worker_" in observed and "of job 01000000 RUNNING" in observed
    assert "its driver pid 18107 (VLLM::EngineCore) has lost its parent (PPID 1)" in observed
    assert "ray stop --force" in zombie["hint"]
    status = (pytester.path / "reports" / "replay" / "status.md").read_text()
    assert "15 checks explained by `hosts.gpu.zombie_workers` failing (" in status, status[:3000]


def test_the_older_ray_executor_dies_on_its_first_request_and_the_run_says_so(pytester):
    """vLLM 0.24.0's older Ray executor (VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0: RayWorkerWrapper, the Sparks' 0.17
    shape) reported ready, then its compiled graph raised `CUDA_VISIBLE_DEVICES set incorrectly` on the first
    generation (vllm.log): no check may pass on what it did not see."""
    run = _replay(pytester, "legacy")
    verdicts = verdicts_of(run["results"])
    assert run["ret"] in (1, 10)
    assert verdicts["serving.health"]["cause"] == "held"  # it answered /health before its first request
    tokens = verdicts["serving.generation.tokens"]
    # the engine answered the plain request with HTTP 500: a broken contract, not a check it could not make (43.3)
    assert tokens["cause"] == "broken" and "HTTP 500" in tokens["observed"], tokens
    assert verdicts["serving.parallel.nodes"]["observed"] == "1"  # RayWorkerWrapper lines, the echo not counted
    # the 500 and the engine's death that followed are one fault: one root cause, the death's checks under it
    roots = run["results"]["root_causes"]
    assert [(r["check"], r["target"]) for r in roots] == [("serving.generation.tokens", "h200-vllm-ray")], roots
    assert sorted(n.split("::")[-1] for n in roots[0]["explains"]) == [
        "test_no_fp8_kv_cache_evidence[h200-vllm-ray]", "test_tool_choice_auto_is_accepted[h200-vllm-ray]"], roots
    dead = verdicts["serving.tool_choice.auto"]
    assert dead["depends_on"][-1] == "serving.generation.tokens@h200-vllm-ray", dead
    assert "stopped answering during the run after a generation request answered POST /v1/chat/completions: " \
        "HTTP 500" in dead["reason"], dead
    assert "llmval: 1 root cause(s)" in run["stdout"], run["stdout"]
    assert "CUDA_VISIBLE_DEVICES set incorrectly" in (REPLAYS / "REAL-h200-vllm-ray-legacy" / "vllm.log").read_text()
