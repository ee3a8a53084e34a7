"""A SYNTHESIZED vLLM 0.17.1 server for the Sparks (TP=2 over Ray across two nodes, qwen3_coder, qwen3 reasoning),
as an httpx.MockTransport handler, from the documented formats in ../shared/reference/engine.md §2 (no Spark ran
here). Variant `glm`: after a reboot the old GLM-4.7-Flash container answers on the port instead."""

from __future__ import annotations

import json

import httpx

MODEL = "Qwen3.5-122B-A10B-FP8"
GLM = "GLM-4.7-Flash"
VERSION = "0.17.1"
CACHE_INFO = ('vllm:cache_config_info{block_size="1056",cache_dtype="auto",enable_prefix_caching="True",'
              'engine="0",gpu_memory_utilization="0.85",mamba_cache_dtype="auto",mamba_ssm_cache_dtype="float32",'
              'num_gpu_blocks="412"} 1.0\n')


def startup_log(variant: str = "healthy") -> str:
    """The docker log lines of the vLLM container on spark1 (engine.md §2.4, §2.5)."""
    model = GLM if variant == "glm" else MODEL
    if variant == "glm":
        args = {"model": f"/models/{GLM}", "served_model_name": [GLM], "enable_auto_tool_choice": True,
                "tool_call_parser": "glm45", "max_model_len": 131072}
        tp, ray = 1, []
    else:
        args = {"model": f"/models/{MODEL}", "served_model_name": [MODEL], "tensor_parallel_size": 2,
                "distributed_executor_backend": "ray", "enable_auto_tool_choice": True,
                "tool_call_parser": "qwen3_coder", "reasoning_parser": "qwen3", "max_model_len": 262144,
                "gpu_memory_utilization": 0.85}
        tp = 2
        ray = ["(RayWorkerWrapper pid=412, ip=192.168.200.1) INFO 11-30 02:10:40 [parallel_state.py:1] rank 0",
               "(RayWorkerWrapper pid=233, ip=192.168.200.2) INFO 11-30 02:10:40 [custom_all_reduce.py:93] Custom "
               "allreduce is disabled because this process group spans across nodes."]
    return "\n".join([
        f"(APIServer pid=1) INFO 11-30 02:10:01 [utils.py:1] non-default args: {args!r}",
        f"(EngineCore_DP0 pid=90) INFO 11-30 02:10:09 [core.py:102] Initializing a V1 LLM engine (v{VERSION}) with "
        f"config: model='/models/{model}', speculative_config=None, dtype=torch.bfloat16, max_seq_len=262144, "
        f"tensor_parallel_size={tp}, pipeline_parallel_size=1, data_parallel_size=1, quantization=fp8, "
        f"kv_cache_dtype=auto, served_model_name={model}, enable_prefix_caching=True",
        *ray,
        '(APIServer pid=1) INFO 11-30 02:12:30 [serving_chat.py:1] "auto" tool choice has been enabled.',
    ]) + "\n"


def handler(variant: str = "healthy"):
    """An httpx.MockTransport handler for spark-vllm."""
    model = GLM if variant == "glm" else MODEL

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/health":
            return httpx.Response(200, text="")
        if path == "/version":
            return httpx.Response(200, json={"version": VERSION})
        if path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{
                "id": model, "object": "model", "created": 1796000000, "owned_by": "vllm",
                "root": f"/models/{model}", "parent": None, "max_model_len": 262144 if model == MODEL else 131072}]})
        if path == "/metrics":
            return httpx.Response(200, text=CACHE_INFO)
        if path == "/v1/chat/completions" and request.method == "POST":
            body = json.loads(request.content)
            if body.get("model") != model:
                return httpx.Response(404, json={"object": "error", "type": "NotFoundError", "code": 404,
                                                 "message": f"The model `{body.get('model')}` does not exist."})
            tokens = min(int(body.get("max_tokens", 16)), 8)
            return httpx.Response(200, json={
                "id": "synth", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "OK", "reasoning": None,
                                                     "tool_calls": []}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": tokens, "total_tokens": 20 + tokens}})
        return httpx.Response(404, json={"detail": "Not Found"})

    return handle
