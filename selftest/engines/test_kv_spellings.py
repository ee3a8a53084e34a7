"""Every FP8/FP4 KV spelling is FP8/FP4 evidence (issue 21.4): the owners' first constraint is BF16 KV.

Each line below is quoted from a public log or written in the exact shape the engine's source prints
(the source named beside it); none passed `serving.kv_cache.dtype.no_fp8` before this change.
"""

from __future__ import annotations

import httpx
import pytest

from llmval.engines import adapter_for, normalize_dtype, parse_sglang_log, parse_vllm_log
from llmval.engines.logs import is_quantized_kv
from llmval.inventory import EndpointSpec
from selftest.engines import fake_sglang

# REAL: a public vLLM 0.19.2rc1.dev8 startup log (docker compose, `--kv-cache-dtype fp8_e4m3`, found with the
# code search); vLLM's `CacheConfig._validate_cache_dtype` logs "Using %s data type to store kv cache. ..."
# with the dtype itself since it accepts fp8_e4m3 / nvfp4 (before, the literal "fp8").
VLLM_FP8_E4M3_STORE = ("(APIServer pid=1) INFO 04-19 10:02:00 [cache.py:247] Using fp8_e4m3 data type to store kv "
                       "cache. It reduces the GPU memory footprint and boosts the performance. Meanwhile, it may cause "
                       "accuracy drop without a proper scaling factor")
# The same log's non-default args (trimmed to the KV keys) and engine-config line (trimmed).
VLLM_FP8_E4M3_ARGS = ("(APIServer pid=1) INFO 04-19 10:01:49 [utils.py:233] non-default args: {'model_tag': "
                      "'RedHatAI/Qwen3.6-35B-A3B-NVFP4', 'max_model_len': 32768, 'gpu_memory_utilization': 0.8, "
                      "'kv_cache_dtype': 'fp8_e4m3', 'enable_prefix_caching': True}")
VLLM_FP8_E4M3_CONFIG = ("(EngineCore pid=207) INFO 04-19 10:02:22 [core.py:107] Initializing a V1 LLM engine "
                        "(v0.19.2rc1.dev8+g4b7f5ea1a) with config: model='RedHatAI/Qwen3.6-35B-A3B-NVFP4', "
                        "dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, "
                        "quantization=compressed-tensors, kv_cache_dtype=fp8_e4m3, device_config=cuda, "
                        "served_model_name=RedHatAI/Qwen3.6-35B-A3B-NVFP4, enable_prefix_caching=True")
# SYNTHESIZED in the shape of that source line with `--kv-cache-dtype nvfp4` (a public run report quotes
# `Using nvfp4 data type to store kv cache`; vLLM's CacheDType lists nvfp4 since 0.25).
VLLM_NVFP4 = ("(APIServer pid=1) INFO 06-02 09:10:11 [utils.py:233] non-default args: {'model_tag': '/models/q', "
              "'kv_cache_dtype': 'nvfp4'}\n"
              "(APIServer pid=1) INFO 06-02 09:10:12 [cache.py:247] Using nvfp4 data type to store kv cache. It "
              "reduces the GPU memory footprint and boosts the performance. Meanwhile, it may cause accuracy drop "
              "without a proper scaling factor\n"
              "(EngineCore pid=90) INFO 06-02 09:10:20 [core.py:107] Initializing a V1 LLM engine (v0.25.1) with "
              "config: model='/models/q', dtype=torch.bfloat16, tensor_parallel_size=1, kv_cache_dtype=nvfp4, "
              "served_model_name=q\n")
# REAL (a public SGLang report, DeepseekV3 TP, 2026-05-08): `load_kv_cache_scales` in SGLang's model runner.
SGLANG_NO_SCALES = ("[2026-05-08 14:34:30 TP0] Using FP8 KV cache but no scaling factors provided. Defaulting to "
                    "scaling factors of 1.0. This may lead to less accurate results!")
# SGLang `configure_kv_cache_dtype` (model_runner) for `--kv-cache-dtype fp4_e2m1`: the warning, then the pool
# line as memory_pool.py `_finalize_allocation_log` prints it (REAL, from a public full-NVFP4 pool report).
SGLANG_FP4 = ("[2026-06-12 02:54:07] FP4 (E2M1) KV Cache might lead to a accuracy drop!\n"
              "[2026-06-12 02:54:07] KV Cache is allocated. dtype: torch.float4_e2m1fn_x2, #tokens: 136448, "
              "K size: 6.52 GB, V size: 3.67 GB\n")
# The older pool line (no dtype) with `Using KV cache dtype:` (0.5.9/0.5.10) vs the newer one (the dtype in the pool
# line, already in 0.5.11/0.5.13 builds, per memory_pool.py): both shapes, whichever the version reports.
SGLANG_OLD_SHAPE = ("[2026-11-30 03:00:40 TP0] Using KV cache dtype: torch.bfloat16\n"
                    "[2026-11-30 03:00:41 TP0] KV Cache is allocated. #tokens: 1000000, K size: 11.25 GB, "
                    "V size: 11.25 GB\n")
SGLANG_NEW_SHAPE_FP8 = ("[2026-11-30 03:00:41 TP0] KV Cache is allocated. dtype: torch.float8_e4m3fn, "
                        "#tokens: 1167552, KV size: 15.03 GB\n")


def _adapter(engine: str, log: str, version: str | None = None, cache_dtype: str = "auto"):
    def handle(request: httpx.Request) -> httpx.Response:
        if engine == "sglang" and request.url.path == "/server_info":
            return httpx.Response(200, json={**fake_sglang.server_info(), "version": version or fake_sglang.VERSION})
        if engine == "vllm" and request.url.path == "/metrics":  # the label as vLLM's CacheConfig.metrics_info has it
            return httpx.Response(200, text=f'vllm:cache_config_info{{block_size="16",cache_dtype="{cache_dtype}",'
                                            'engine="0"} 1.0\n')
        return httpx.Response(404)

    spec = EndpointSpec(name=f"{engine}-ep", platform="p", base_url="http://engine.test:1", engine=engine,
                        model=fake_sglang.MODEL, request_timeout_s=1)
    return adapter_for(spec, httpx.Client(base_url="http://engine.test:1", transport=httpx.MockTransport(handle)),
                       read_log=lambda: log)


@pytest.mark.parametrize(("raw", "family"), [
    ("fp8", "fp8"), ("fp8_e4m3", "fp8"), ("fp8_e5m2", "fp8"), ("fp8_inc", "fp8"), ("fp8_ds_mla", "fp8"),
    ("fp8_per_token_head", "fp8"), ("torch.float8_e4m3fn", "fp8"), ("float8_e5m2", "fp8"), ("e4m3", "fp8"),
    ("E5M2", "fp8"), ("uint8", "fp8"), ("'fp8_e4m3'", "fp8"),
    ("fp4_e2m1", "fp4"), ("nvfp4", "fp4"), ("NVFP4", "fp4"), ("nvfp4_ds_mla", "fp4"), ("mxfp4", "fp4"),
    ("torch.float4_e2m1fn_x2", "fp4"), ("e2m1", "fp4"),
    ("bf16", "bfloat16"), ("auto", "auto"), ("int8_per_token_head", "int8_per_token_head")])
def test_every_kv_spelling_normalizes_to_its_family(raw, family):
    assert normalize_dtype(raw) == family
    assert is_quantized_kv(raw) == (family in {"fp8", "fp4"})


def test_vllm_fp8_e4m3_store_line_args_and_engine_config_are_each_evidence():
    for line, needle in ((VLLM_FP8_E4M3_STORE, "Using fp8_e4m3 data type"),
                         (VLLM_FP8_E4M3_ARGS, "'kv_cache_dtype': 'fp8_e4m3'"),
                         (VLLM_FP8_E4M3_CONFIG, "kv_cache_dtype=fp8_e4m3")):
        quotes = parse_vllm_log(line + "\n").fp8_kv_quotes
        assert any(needle in q for q in quotes), (needle, quotes)
    vllm = _adapter("vllm", "\n".join((VLLM_FP8_E4M3_ARGS, VLLM_FP8_E4M3_STORE, VLLM_FP8_E4M3_CONFIG)) + "\n",
                    cache_dtype="fp8_e4m3")
    assert len(vllm.log.fp8_kv_quotes) == 3 and len(vllm.kv_fp8_quotes()) == 4
    assert [e.resolved for e in vllm.kv_cache_evidence()] == ["fp8", "fp8"]


def test_vllm_nvfp4_kv_is_fp4_evidence_not_its_own_dtype():
    facts = parse_vllm_log(VLLM_NVFP4)
    assert len(facts.fp8_kv_quotes) == 3 and any("Using nvfp4 data type" in q for q in facts.fp8_kv_quotes)
    vllm = _adapter("vllm", VLLM_NVFP4, cache_dtype="nvfp4")
    assert [e.resolved for e in vllm.kv_cache_evidence()] == ["fp4", "fp4"] and len(vllm.kv_fp8_quotes()) == 4


def test_sglang_fp8_without_scales_and_fp4_lines_are_evidence():
    assert parse_sglang_log(SGLANG_NO_SCALES + "\n").fp8_kv_quotes == (SGLANG_NO_SCALES,)
    quotes = parse_sglang_log(SGLANG_FP4).fp8_kv_quotes
    assert len(quotes) == 2 and "FP4 (E2M1)" in quotes[0] and "float4_e2m1fn_x2" in quotes[1]
    assert parse_sglang_log(SGLANG_FP4).kv_allocations[0].dtype == "fp4"


def test_sglang_server_args_kv_dtype_is_evidence():
    line = ("[2026-11-30 03:00:01] server_args=ServerArgs(model_path='/models/q', tp_size=4, "
            "kv_cache_dtype='fp4_e2m1', attention_backend='triton')\n")
    assert any("kv_cache_dtype='fp4_e2m1'" in q for q in parse_sglang_log(line).fp8_kv_quotes)


@pytest.mark.parametrize("version", ["0.5.10.post1", "0.5.11", "0.5.13", "0.5.23", "0.0.0.dev1+g4c5e1a2"])
def test_sglang_reads_both_kv_line_shapes_whatever_the_version(version):
    for log, dtype in ((SGLANG_OLD_SHAPE, "bfloat16"), (SGLANG_NEW_SHAPE_FP8, "fp8")):
        log_sources = [e for e in _adapter("sglang", log, version).kv_cache_evidence()
                       if e.source.startswith("engine log")]
        assert [e.resolved for e in log_sources] == [dtype], (version, log_sources)
    both = SGLANG_OLD_SHAPE + SGLANG_NEW_SHAPE_FP8  # the two shapes disagree: one mixed source, never a pass
    log_sources = [e for e in _adapter("sglang", both, version).kv_cache_evidence()
                   if e.source.startswith("engine log")]
    assert [e.resolved for e in log_sources] == ["mixed: bfloat16, fp8"]


def _sglang_info_adapter(info: dict, log: str):
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/server_info":
            return httpx.Response(200, json=info)
        return httpx.Response(404)

    spec = EndpointSpec(name="sglang-ep", platform="p", base_url="http://engine.test:1", engine="sglang",
                        model=fake_sglang.MODEL, request_timeout_s=1)
    return adapter_for(spec, httpx.Client(base_url="http://engine.test:1", transport=httpx.MockTransport(handle)),
                       read_log=lambda: log)


# SGLang 0.5.17 on the lent H200 (issue 30.1): `/server_info` said "dtype": "bfloat16", "quantization": null and
# internal_states[0] "kv_cache_dtype": "auto"; the log "KV Cache is allocated. dtype: torch.bfloat16". Shapes
# SYNTHESIZED from those quoted values (the REAL recording: selftest/data/replays/REAL-h200-sglang-0.5.17-*).
def _auto_info(**changes) -> dict:
    info = {**fake_sglang.server_info(), "dtype": "bfloat16", "quantization": None, "kv_cache_dtype": "auto", **changes}
    info["internal_states"] = [{**info["internal_states"][0], "kv_cache_dtype": "auto"}]
    return info


def test_sglang_auto_kv_is_the_model_dtype_and_says_how():
    evidence = _sglang_info_adapter(_auto_info(), SGLANG_OLD_SHAPE).kv_cache_evidence()
    assert [e.resolved for e in evidence] == ["bfloat16", "bfloat16"]  # two sources: the BF16 rule holds
    assert 'auto = the model dtype: /server_info "dtype": "bfloat16", "quantization": null' in evidence[0].source


@pytest.mark.parametrize(("changes", "why"), [
    ({"quantization": "modelopt_fp8"}, "may carry an FP8/FP4 KV algorithm"),
    ({"dtype": "auto"}, '"dtype" is "auto" too')])
def test_sglang_auto_kv_is_not_resolved_where_sglang_could_choose_fp8_or_the_dtype_is_unknown(changes, why):
    evidence = _sglang_info_adapter(_auto_info(**changes), SGLANG_OLD_SHAPE).kv_cache_evidence()
    assert evidence[0].resolved is None and why in evidence[0].source, evidence[0]


def test_sglang_auto_kv_on_a_server_that_allocated_fp8_is_two_sources_that_disagree():
    # a ModelOpt checkpoint found by its config alone: /server_info says no quantization, the pool is FP8
    evidence = _sglang_info_adapter(_auto_info(), SGLANG_NEW_SHAPE_FP8).kv_cache_evidence()
    assert [e.resolved for e in evidence] == ["bfloat16", "fp8"]
