"""Log evidence parsers against REAL vLLM 0.32.0 captures and SYNTHESIZED SGLang lines (engine.md §1.6)."""

from __future__ import annotations

import pytest

from llmval.engines import normalize_dtype, parse_sglang_log, parse_vllm_log
from selftest.engines import fake_sglang
from selftest.strategies import ROOT

DATA = ROOT / "selftest" / "data" / "engines"


def test_real_vllm_bf16_log_states_dtype_parser_and_tp():
    facts = parse_vllm_log((DATA / "REAL-vllm-0.32.0-cpu-bf16.log").read_text())
    assert (facts.version, facts.model_dtype, facts.kv_cache_dtype) == ("0.32.0", "bfloat16", "auto")
    assert (facts.tensor_parallel_size, facts.served_model_name, facts.tool_call_parser) == (1, "smollm2", "hermes")
    assert facts.non_default_args["enable_auto_tool_choice"] is True
    assert facts.fp8_kv_quotes == () and facts.ray_worker_ips == ()


@pytest.mark.skipif(not (DATA / "REAL-vllm-0.32.0-cpu-fp8-kv.log").exists(), reason="fp8 capture not recorded yet")
def test_real_vllm_fp8_log_is_quoted():
    facts = parse_vllm_log((DATA / "REAL-vllm-0.32.0-cpu-fp8-kv.log").read_text())
    assert facts.kv_cache_dtype == "fp8"
    assert any("Using fp8 data type to store kv cache" in q for q in facts.fp8_kv_quotes)


def test_vllm_log_is_judged_by_its_latest_start():
    old = "INFO non-default args: {'kv_cache_dtype': 'fp8'}\nWARNING Using fp8 data type to store kv cache.\n"
    new = (DATA / "REAL-vllm-0.32.0-cpu-bf16.log").read_text()
    assert parse_vllm_log(old + new).fp8_kv_quotes == ()


def test_vllm_ray_worker_ips_count_nodes():
    text = ("INFO non-default args: {'tensor_parallel_size': 2, 'distributed_executor_backend': 'ray'}\n"
            "(RayWorkerWrapper pid=311, ip=192.168.200.1) INFO x\n(RayWorkerWrapper pid=94, ip=192.168.200.2) INFO y\n"
            "(RayWorkerWrapper pid=95, ip=192.168.200.2) INFO Custom allreduce is disabled because this process "
            "group spans across nodes.\n")
    facts = parse_vllm_log(text)
    assert facts.ray_worker_ips == ("192.168.200.1", "192.168.200.2")
    assert facts.distributed_executor_backend == "ray" and "spans across nodes" in facts.cross_node_quote


@pytest.mark.parametrize(("variant", "dtype"), [("healthy", "bfloat16"), ("fp8-kv", "fp8")])
def test_synthesized_sglang_log_kv_lines(variant, dtype):
    facts = parse_sglang_log(fake_sglang.startup_log(variant))
    assert [line.value for line in facts.kv_dtypes] == [dtype]
    assert facts.kv_allocations[0].tokens == 1_000_000 and facts.context_len == 262144
    assert facts.server_args["speculative_num_steps"] == 4
    assert bool(facts.fp8_kv_quotes) == (dtype == "fp8")


def test_sglang_0_5_23_allocation_line_carries_dtype():
    line = "[TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 4096, K size: 0.05 GB, V size: 0.05 GB\n"
    alloc = parse_sglang_log(line).kv_allocations[0]
    assert (alloc.dtype, alloc.tokens, alloc.k_gb) == ("bfloat16", 4096, 0.05)


@pytest.mark.parametrize(("raw", "dtype"), [("bf16", "bfloat16"), ("torch.bfloat16", "bfloat16"), ("auto", "auto"),
                                            ("fp8_e4m3", "fp8"), ("torch.float8_e5m2", "fp8"), ("uint8", "fp8"),
                                            ("fp4_e2m1", "fp4"), ("half", "float16")])
def test_dtype_spellings_normalize(raw, dtype):
    assert normalize_dtype(raw) == dtype
