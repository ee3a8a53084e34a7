"""The KV cache dtype is what the inventory says (BF16 on the seed platforms: the owner rejected FP8),
proven by at least two independent sources; any FP8 KV evidence fails with the evidence quoted."""

import pytest

from llmval.engines.logs import is_quantized_kv

pytestmark = [pytest.mark.serving, pytest.mark.smoke]

MIN_SOURCES = 2
FIX = ("drop --kv-cache-dtype fp8*/fp4*/nvfp4 (vLLM: auto or bfloat16; SGLang: bf16); check the checkpoint's kv "
       "quant config")


def test_kv_cache_dtype_proven_by_two_sources(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.kv_cache_dtype, "expect.kv_cache_dtype")
    evidence = engine.kv_cache_evidence()
    observed = {e.source: f"{e.raw} -> {e.resolved}" for e in evidence}
    agree = len(evidence) >= MIN_SOURCES and all(e.resolved == expected for e in evidence)
    expect(endpoint.name, "serving.kv_cache.dtype", expected=f"{expected} from >= {MIN_SOURCES} sources",
           observed=observed or "no source states it", ok=agree,
           hint=FIX if evidence else "declare `logs` for the endpoint; SGLang also needs --enable-metrics",
           evidence=" | ".join(e.quote for e in evidence))


def test_no_fp8_kv_cache_evidence(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.kv_cache_dtype, "expect.kv_cache_dtype")
    quotes = engine.kv_fp8_quotes()
    expect(endpoint.name, "serving.kv_cache.dtype.no_fp8", expected="no FP8/FP4 KV evidence",
           observed=quotes or "none", ok=not quotes or is_quantized_kv(expected), hint=FIX, evidence=" | ".join(quotes),
           depends_on=("serving.kv_cache.dtype",))  # FP8 KV fails both: one fault, the dtype check its root
