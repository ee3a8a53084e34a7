"""REAL GPU evidence: the smoke contract replayed from a real vLLM 0.24.0 (CUDA) on a lent NVIDIA H200
(selftest/data/replays/REAL-h200-vllm-0.24.0-healthy, README there: recorded, not synthesized).

Issue 21.1 on real GPU data: fuser prints the engine core's 15-character comm `VLLM::EngineCor`, the owner writes
`VLLM::EngineCore`, and the holder is allowed, the verdict saying which name matched. Issue 21.2's healthy side:
the engine core is attached (its ancestor, the API server, serves the declared port), so no zombie."""

from __future__ import annotations

import json

import pytest

from selftest.serving.smoke_replay import replay_smoke, verdicts_of
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
REPLAYS = ROOT / "selftest" / "data" / "replays"
RECORDING = REPLAYS / "REAL-h200-vllm-0.24.0-healthy"


def _replay(pytester, recording=RECORDING) -> dict:
    return replay_smoke(pytester, recording)


def test_the_real_h200_smoke_replays_green_as_recorded(pytester):
    run = _replay(pytester)
    live = json.loads((RECORDING / "reports" / "results.json").read_text())
    assert run["ret"] == 0 and live["exitstatus"] == 0
    # serving.model.identity (issue 42.5) came after the recording: one check more, held on the recorded evidence
    assert run["results"]["counts"]["passed"] == live["counts"]["passed"] + 1 == 26
    assert verdicts_of(run["results"])["serving.model.identity"]["cause"] == "held"


def test_the_engine_core_is_allowed_by_the_name_the_owner_wrote_and_is_attached(pytester):
    verdicts = verdicts_of(_replay(pytester)["results"])
    # the kernel's 15-character comm, as fuser printed it on the H200
    assert "1119 F...m VLLM::EngineCor\n" in (RECORDING / "after" / "fuser-v.txt").read_text()
    stray = verdicts["hosts.gpu.stray_processes"]
    assert "VLLM::EngineCor: allowed as `VLLM::EngineCore`: its process title" in stray["evidence"], stray
    zombies = verdicts["hosts.gpu.zombie_workers"]
    assert zombies["observed"] == "none", zombies
    assert "VLLM::EngineCore: its ancestor pid 922" in zombies["evidence"] and "serves port 8000" in zombies["evidence"]


def test_fp8_kv_on_the_gpu_fails_exactly_the_two_kv_checks(pytester):
    run = _replay(pytester, REPLAYS / "REAL-h200-vllm-0.24.0-fp8kv")
    failed = [t["nodeid"].split("::")[-1] for t in run["results"]["tests"] if t["outcome"] in ("failed", "error")]
    assert run["ret"] == 1
    assert sorted(failed) == ["test_kv_cache_dtype_proven_by_two_sources[h200-vllm]",
                              "test_no_fp8_kv_cache_evidence[h200-vllm]"], failed
    no_fp8 = verdicts_of(run["results"])["serving.kv_cache.dtype.no_fp8"]
    assert "Using fp8 data type to store kv cache" in str(no_fp8["observed"]), no_fp8


@pytest.mark.parametrize("name", ["ngram", "nowait"])
def test_speculation_and_the_fresh_start_replay_green(pytester, name):
    run = _replay(pytester, REPLAYS / f"REAL-h200-vllm-0.24.0-{name}")
    assert run["ret"] == 0, [t["nodeid"] for t in run["results"]["tests"] if t["outcome"] != "passed"]
    if name == "ngram":
        checks = verdicts_of(run["results"])
        assert any(c.startswith("serving.speculative.") for c in checks), "no speculative check ran"
    else:  # the live run waited out the start before judging (--wait-ready cannot replay)
        assert "[wait-ready] h200-vllm ready after 94.2 s" in (REPLAYS / "REAL-h200-vllm-0.24.0-nowait" / "pytest.out"
                                                              ).read_text()


def test_the_killed_api_server_leaves_one_root_cause_naming_the_orphan_and_its_gpu_memory(pytester):
    run = _replay(pytester, REPLAYS / "REAL-h200-vllm-0.24.0-zombie")
    assert run["ret"] == 1
    zombie = verdicts_of(run["results"])["hosts.gpu.zombie_workers"]
    assert "pid 1772 VLLM::EngineCore" in zombie["observed"] and "its parent is gone (PPID 1)" in zombie["observed"]
    assert "holds 43.2 GiB (44222 MiB)" in zombie["observed"] and "port 8000: nothing listens" in zombie["observed"]
    assert "kill <pid>` of the orphaned VLLM::EngineCore" in zombie["hint"]
    status = (pytester.path / "reports" / "replay" / "status.md").read_text()
    assert "17 checks explained by `hosts.gpu.zombie_workers` failing (15 could not run, 2 failed with it)" in status, \
        status[:3000]
    live = (REPLAYS / "REAL-h200-vllm-0.24.0-zombie" / "pytest.out").read_text()
    assert "llmval: 1 root cause(s)" in live and "BROKEN hosts.gpu.zombie_workers [h200]" in live
