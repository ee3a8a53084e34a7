"""REAL GPU evidence: the smoke contract replayed from a real vLLM 0.24.0 (CUDA) on a lent NVIDIA H200
(selftest/data/replays/REAL-h200-vllm-0.24.0-healthy, README there: recorded, not synthesized).

Issue 21.1 on real GPU data: fuser prints the engine core's 15-character comm `VLLM::EngineCor`, the owner writes
`VLLM::EngineCore`, and the holder is allowed, the verdict saying which name matched. Issue 21.2's healthy side:
the engine core is attached (its ancestor, the API server, serves the declared port), so no zombie."""

from __future__ import annotations

import json
import sys

from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
RECORDING = ROOT / "selftest" / "data" / "replays" / "REAL-h200-vllm-0.24.0-healthy"


def _replay(pytester) -> dict:
    pytester.chdir()
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                          str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests"), "-m", "smoke",
                          "-p", "no:xdist", "-p", "no:randomly", "--inventory", str(RECORDING / "inventory.toml"),
                          "--replay", str(RECORDING), timeout=300)
    return {"ret": result.ret, "results": json.loads((pytester.path / "reports" / "results.json").read_text())}


def _verdicts(results: dict) -> dict[str, dict]:
    return {v["check"]: v for t in results["tests"] for v in t.get("verdicts", [])}


def test_the_real_h200_smoke_replays_green_as_recorded(pytester):
    run = _replay(pytester)
    live = json.loads((RECORDING / "reports" / "results.json").read_text())
    assert run["ret"] == 0 and live["exitstatus"] == 0
    assert run["results"]["counts"]["passed"] == live["counts"]["passed"] == 25


def test_the_engine_core_is_allowed_by_the_name_the_owner_wrote_and_is_attached(pytester):
    verdicts = _verdicts(_replay(pytester)["results"])
    # the kernel's 15-character comm, as fuser printed it on the H200
    assert "1119 F...m VLLM::EngineCor\n" in (RECORDING / "after" / "fuser-v.txt").read_text()
    stray = verdicts["hosts.gpu.stray_processes"]
    assert "VLLM::EngineCor: allowed as `VLLM::EngineCore`: its process title" in stray["evidence"], stray
    zombies = verdicts["hosts.gpu.zombie_workers"]
    assert zombies["observed"] == "none", zombies
    assert "VLLM::EngineCore: its ancestor pid 922" in zombies["evidence"] and "serves port 8000" in zombies["evidence"]
