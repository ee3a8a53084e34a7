"""The SGLang adapter judges SYNTHESIZED kpro6 /server_info payloads through the real contract (replayed):
healthy passes; FP8 KV, speculative_num_steps=5 and a flashinfer attention backend each fail, naming the cause,
and nothing else fails."""

from __future__ import annotations

import json

import pytest

from selftest.contract import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
REPLAYS = ROOT / "selftest" / "data" / "replays"
CASES = {
    "healthy": {},
    "fp8-kv": {"test_kv_cache_dtype_proven_by_two_sources[kpro6-sglang]": "-> fp8",
               "test_no_fp8_kv_cache_evidence[kpro6-sglang]": "fp8_e4m3"},
    "steps5": {"test_speculative_setting_matches[kpro6-sglang-num_steps]": "observed: 5",
               "test_speculative_setting_matches[kpro6-sglang-num_draft_tokens]": "observed: 6"},
    "flashinfer": {"test_attention_backend_matches[kpro6-sglang]": "observed: flashinfer"},
}


@pytest.mark.parametrize("variant", list(CASES))
def test_kpro6_sglang_payload_verdicts(pytester, variant):
    run_contract(pytester, "-m", "smoke and serving", "-p", "no:xdist", "--inventory",
                 str(ROOT / "inventories" / "kpro6.toml"),
                 "--replay", str(REPLAYS / f"SYNTHESIZED-kpro6-sglang-{variant}"))
    tests = json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]
    failed = {t["nodeid"].split("::")[-1]: t["message"] for t in tests if t["outcome"] not in {"passed", "skipped"}}
    expected = CASES[variant]
    assert set(failed) == set(expected), failed
    for name, cause in expected.items():
        assert cause in failed[name], failed[name]
        assert "[kpro6-sglang]" in failed[name] and "expected:" in failed[name]
    assert sum(t["outcome"] == "passed" for t in tests) >= 12


@pytest.mark.parametrize("variant", ["healthy", "glm"])
def test_spark_vllm_payload_verdicts(pytester, variant):
    """Spark (vLLM 0.17.1, TP=2 over Ray): healthy passes; the stale GLM-4.7-Flash container is caught by the
    model-id check, and every generating check says it cannot run because the model is not served."""
    run_contract(pytester, "-m", "smoke and serving", "-p", "no:xdist", "--inventory",
                 str(ROOT / "inventories" / "spark.toml"), "--replay",
                 str(REPLAYS / f"SYNTHESIZED-spark-vllm-{variant}"))
    tests = json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]
    failed = {t["nodeid"].split("::")[-1]: t["message"] for t in tests if t["outcome"] not in {"passed", "skipped"}}
    if variant == "healthy":
        assert failed == {} and sum(t["outcome"] == "passed" for t in tests) >= 12
        return
    model = failed["test_served_model_matches_inventory[spark-vllm]"]
    assert "observed: ['GLM-4.7-Flash']" in model and "GLM-4.7-Flash container" in model, model
    assert "does not serve model" in failed["test_tiny_generation_returns_text[spark-vllm]"]
