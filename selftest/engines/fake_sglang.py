"""A SYNTHESIZED SGLang 0.5.10 server for kpro6, as an httpx.MockTransport handler, built from the documented
formats in ../shared/reference/engine.md §1 (no SGLang server was run): `/server_info` with flat ServerArgs
keys plus `internal_states`, `/v1/models`, `/metrics`, the journal's startup lines. Variants break one decision.

Used by `synthesize.py` (writes the SYNTHESIZED-kpro6-sglang-* replays through the real contract) and by the
adapter self-tests directly.
"""

from __future__ import annotations

import copy
import json

import httpx

MODEL = "Qwen3.5-122B-A10B-FP8"
VERSION = "0.5.10.post1"
HEALTHY_SERVER_INFO: dict = {
    "model_path": f"/models/{MODEL}", "served_model_name": MODEL, "context_length": None, "dtype": "auto",
    "kv_cache_dtype": "bf16", "tp_size": 4, "pp_size": 1, "dp_size": 1, "nnodes": 1, "ep_size": 1,
    "attention_backend": "triton", "linear_attn_backend": "triton", "mamba_backend": "triton",
    "speculative_algorithm": "EAGLE", "speculative_draft_model_path": None, "speculative_num_steps": 4,
    "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 5, "tool_call_parser": "qwen3_coder",
    "reasoning_parser": "qwen3", "enable_metrics": True, "decode_log_interval": 40, "max_running_requests": 48,
    "status": "ready", "max_total_num_tokens": 1000000, "max_req_input_len": 262138, "version": VERSION,
}
INTERNAL_STATE_EXTRA = {"last_gen_throughput": 142.7, "effective_max_running_requests_per_dp": 48,
                        "memory_usage": {"weight": 30.6, "kvcache": 22.5, "token_capacity": 1000000, "graph": 1.9},
                        "avg_spec_accept_length": 3.12}


def server_info(variant: str = "healthy") -> dict:
    """The /server_info payload of one variant: healthy, fp8-kv, steps5, flashinfer."""
    info = copy.deepcopy(HEALTHY_SERVER_INFO)
    if variant == "fp8-kv":
        info["kv_cache_dtype"] = "fp8_e4m3"
    elif variant == "steps5":
        info["speculative_num_steps"] = 5
        info["speculative_num_draft_tokens"] = 6  # SGLang forces steps + 1 when topk == 1
    elif variant == "flashinfer":
        info["attention_backend"] = "flashinfer"
    elif variant != "healthy":
        raise ValueError(f"unknown variant {variant!r}; valid: healthy, fp8-kv, steps5, flashinfer")
    state = {**{k: v for k, v in info.items() if k not in {"status", "max_total_num_tokens", "max_req_input_len",
                                                             "version"}}, **INTERNAL_STATE_EXTRA}
    return {**info, "internal_states": [state]}


def startup_log(variant: str = "healthy") -> str:
    """The journal lines the log reader selects (formats: engine.md §1.6)."""
    info = server_info(variant)
    torch_dtype = "torch.float8_e4m3fn" if info["kv_cache_dtype"].startswith("fp8") else "torch.bfloat16"
    args = ", ".join(f"{k}={v!r}" for k, v in info.items() if k not in {"internal_states", "status", "version",
                                                                          "max_total_num_tokens", "max_req_input_len"})
    kv_gb = "5.62" if torch_dtype.endswith("fn") else "11.25"
    return "\n".join([
        f"[2026-11-30 03:00:01] server_args=ServerArgs({args})",
        f"[2026-11-30 03:00:40 TP0] Using KV cache dtype: {torch_dtype}",
        f"[2026-11-30 03:00:41 TP0] KV Cache is allocated. #tokens: 1000000, K size: {kv_gb} GB, V size: {kv_gb} GB",
        "[2026-11-30 03:00:52 TP0] max_total_num_tokens=1000000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=48, context_len=262144, available_gpu_mem=12.40 GB",
    ]) + "\n"


METRICS_TEXT = """# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{{engine_type="unified",model_name="{model}",tp_rank="0",pp_rank="0",moe_ep_rank="0"}} {accept}
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{{model_name="{model}"}} {tokens}
"""


TOKENS_PER_CHUNK = 3  # EAGLE, 4 steps, topk 1: one verify step emits 1 + accepted drafts (<= 5)


def completion_stream(body: dict) -> str:
    """A streamed /v1/completions answer (OpenAI SSE as SGLang sends it): TOKENS_PER_CHUNK words per chunk,
    then the usage message and [DONE]. SYNTHESIZED: the shape, not a measurement."""
    tokens = int(body.get("max_tokens", 16))
    events = []
    for start in range(0, tokens, TOKENS_PER_CHUNK):
        n = min(TOKENS_PER_CHUNK, tokens - start)
        last = start + n >= tokens
        events.append({"id": "synth", "object": "text_completion", "created": 1796000000, "model": MODEL,
                       "choices": [{"index": 0, "text": " the" * n, "logprobs": None,
                                    "finish_reason": "length" if last else None}]})
    events.append({"id": "synth", "object": "text_completion", "created": 1796000000, "model": MODEL, "choices": [],
                   "usage": {"prompt_tokens": 40, "completion_tokens": tokens, "total_tokens": 40 + tokens}})
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def handler(variant: str = "healthy", *, legacy: bool = False) -> callable:
    """An httpx.MockTransport handler; `legacy`: /server_info is 404 and only /get_server_info answers."""
    state = {"generated": 120000.0}

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path in ("/health", "/health_generate"):
            return httpx.Response(200, text="")
        if (path == "/server_info" and not legacy) or path == "/get_server_info":
            return httpx.Response(200, json=server_info(variant))
        if path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{
                "id": MODEL, "object": "model", "created": 1796000000, "owned_by": "sglang", "root": MODEL,
                "parent": None, "max_model_len": 262144}]})
        if path == "/model_info":
            return httpx.Response(200, json={"model_path": f"/models/{MODEL}", "is_generation": True,
                                             "architectures": ["Qwen3_5MoeForConditionalGeneration"]})
        if path == "/metrics":
            return httpx.Response(200, text=METRICS_TEXT.format(model=MODEL, accept="3.05",
                                                                tokens=state["generated"]))
        if path == "/v1/completions" and request.method == "POST":
            return httpx.Response(200, text=completion_stream(json.loads(request.content)),
                                  headers={"content-type": "text/event-stream"})
        if path == "/v1/chat/completions" and request.method == "POST":
            body = json.loads(request.content)
            tokens = min(int(body.get("max_tokens", 16)), 8)
            state["generated"] += tokens
            return httpx.Response(200, json={
                "id": "synth", "object": "chat.completion", "created": 1796000000, "model": MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "OK", "reasoning_content": None,
                                                     "tool_calls": None},
                             "finish_reason": "stop", "matched_stop": 151645}],
                "usage": {"prompt_tokens": 20, "completion_tokens": tokens, "total_tokens": 20 + tokens}})
        return httpx.Response(404, json={"detail": "Not Found"})

    return handle
