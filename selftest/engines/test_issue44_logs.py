"""Issue 44.5/44.6: vLLM's `non-default args` as a source of tensor_parallel_size and every served_model_name alias;
vLLM's `SpecDecoding metrics:` and SGLang's `accept len` lines as the acceptance source beside /metrics.

Every log line here is SYNTHESIZED in the engines' own formats: vLLM's `non-default args: {...}`
(vllm/entrypoints/utils.py `log_non_default_args`, the printed dict) and its `SpecDecoding metrics:` line
(vllm/v1/spec_decode/metrics.py `SpecDecodingLogging.log`: mean acceptance length, accepted/drafted tokens,
per-position rates, as public vLLM 0.2x logs show it), SGLang's `Decode batch. ... accept len: X, accept rate: Y`
(python/sglang/srt/managers/scheduler_metrics_mixin.py), each in its record prefix and, where said, under Ray.
"""

from __future__ import annotations

import httpx

from llmval.engines import adapter_for
from llmval.engines.logs import PLACEMENT_STALL_LINES, PLACEMENT_STALL_RANK, parse_sglang_log, parse_vllm_log
from llmval.hostfacts import log_command
from llmval.inventory import EndpointSpec, HostSpec
from llmval.io.transport import connect

PREFIX = "(APIServer pid=4411) INFO 12-06 21:55:{:02d} [{}] "
ARGS = PREFIX.format(1, "utils.py:233") + (
    "non-default args: {'model_tag': '/models/Qwen3.5-122B-A10B-FP8', 'host': '0.0.0.0', 'port': 8000, "
    "'model': '/models/Qwen3.5-122B-A10B-FP8', 'served_model_name': ['qwen3.5-122b', 'qwen3.5', 'default'], "
    "'tensor_parallel_size': 2, 'distributed_executor_backend': 'ray', 'speculative_config': "
    "{'method': 'qwen3_next_mtp', 'num_speculative_tokens': 3}}")
SPEC = PREFIX.format(17, "metrics.py:101") + (
    "SpecDecoding metrics: Mean acceptance length: {:.2f}, Accepted throughput: 35.90 tokens/s, Drafted throughput: "
    "57.60 tokens/s, Accepted: {} tokens, Drafted: {} tokens, Per-position acceptance rate: 0.801, 0.655, 0.470, "
    "Avg Draft acceptance rate: 62.0%")


def test_tensor_parallel_size_and_every_alias_from_non_default_args_when_the_config_line_is_cut():
    """The engine-config line rotated out (or a wrapper that logs only the args): TP 2 was could-not-check."""
    facts = parse_vllm_log(ARGS + "\n")
    assert facts.tensor_parallel_size == 2
    assert facts.tensor_parallel_size_quote == "non-default args: 'tensor_parallel_size': 2"
    assert facts.served_model_names == ("qwen3.5-122b", "qwen3.5", "default")
    assert facts.served_model_name == "qwen3.5-122b"


def test_the_config_line_still_wins_and_one_name_is_one_alias():
    config = PREFIX.format(2, "core.py:93") + ("Initializing a V1 LLM engine (v0.17.1) with config: model='/m', "
                                               "dtype=torch.bfloat16, tensor_parallel_size=4, served_model_name=m, x=y")
    facts = parse_vllm_log(ARGS.replace("'served_model_name': ['qwen3.5-122b', 'qwen3.5', 'default']",
                                        "'served_model_name': 'm'") + "\n" + config + "\n")
    assert (facts.tensor_parallel_size, facts.served_model_names) == (4, ("m",))
    assert facts.tensor_parallel_size_quote.startswith("Initializing a V1 LLM engine")


def _adapter(engine: str, log: str):
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="# no speculative counters\nvllm:num_requests_running 0\n")

    spec = EndpointSpec(name=f"{engine}-ep", platform="p", base_url="http://engine.test:1", engine=engine,
                        model="m", request_timeout_s=1)
    client = httpx.Client(base_url="http://engine.test:1", transport=httpx.MockTransport(handle))
    return adapter_for(spec, client, read_log=lambda: log)


def test_vllm_acceptance_falls_back_to_its_specdecoding_lines_under_ray():
    """/metrics without spec-decode counters: the latest `SpecDecoding metrics:` interval of the log is the source,
    read through the envelope stage (a Ray-forwarded, deduplicated copy reads the same)."""
    lines = [ARGS, SPEC.format(2.87, 359, 576), "(EngineCore_DP0 pid=2301) (RayWorkerWrapper pid=2981, ip=10.0.0.2) "
             + SPEC.format(3.06, 434, 633) + " [repeated 2x across cluster]"]
    adapter = _adapter("vllm", "\n".join(lines) + "\n")
    intervals = adapter.log.spec_decoding
    assert [i.mean_length for i in intervals] == [2.87, 3.06]
    assert intervals[-1].per_position == (0.801, 0.655, 0.47) and round(intervals[-1].rate, 3) == 0.686
    metrics = adapter.metrics()
    fact = adapter.accept_length(metrics, metrics)
    assert fact.value == 3.06
    assert fact.source.startswith("engine log: the latest of 2 `SpecDecoding metrics:` intervals (/metrics: ")
    assert "Mean acceptance length: 3.06" in fact.quote


def test_sglang_acceptance_falls_back_to_its_accept_len_lines():
    log = ("[2026-12-06 21:55:01] server_args=ServerArgs(model_path='/m', speculative_algorithm='EAGLE3', "
           "kv_cache_dtype='auto')\n"
           "[2026-12-06 21:55:20 TP0] Decode batch. #running-req: 1, #token: 1203, token usage: 0.01, accept len: "
           "2.41, accept rate: 0.60, cuda graph: True, gen throughput (token/s): 181.22, #queue-req: 0\n"
           "[2026-12-06 21:55:24 TP0] Decode batch. #running-req: 1, #token: 1363, token usage: 0.01, accept len: "
           "2.95, accept rate: 0.74, cuda graph: True, gen throughput (token/s): 203.54, #queue-req: 0\n")
    assert parse_sglang_log(log).accept_lengths == (2.41, 2.95)
    adapter = _adapter("sglang", log)
    metrics = adapter.metrics()
    fact = adapter.accept_length(metrics, metrics)
    assert fact.value == 2.95 and "accept len: 2.95" in fact.quote
    assert fact.source.startswith("engine log: the latest of 2 `Decode batch` accept len lines")


# SYNTHESIZED in vLLM's ray_utils.py wording (as public vLLM-on-Ray logs print it: `(EngineCore_DP0 pid=N)`, the
# record prefix, the 10 s / 20 s backoff of `_wait_until_pg_ready`); pids, times and node ids invented.
RAY_PREFIX = "(EngineCore_DP0 pid=742) {} 12-06 11:11:{:02d} [ray_utils.py:{}] "
PLACEMENT = [
    RAY_PREFIX.format("INFO", 49, 378) + "No current placement group found. Creating a new placement group.",
    RAY_PREFIX.format("WARNING", 49, 227) + "tensor_parallel_size=2 is bigger than a reserved number of GPUs (1 GPUs) "
    "in a node 105bc4e57711c6d8124de9ca4ea66c94df13653ce39ff1f0179e31c3. Tensor parallel workers can be spread out to "
    "2+ nodes which can degrade the performance unless you have fast interconnect across nodes, like Infiniband. To "
    "resolve this issue, make sure you have more than 2 GPUs available at each node.",
    RAY_PREFIX.format("INFO", 59, 212) + "Waiting for creating a placement group of specs for 10 seconds. "
    "specs=[{'node:192.168.200.1': 0.001, 'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` and `ray list nodes` to "
    "see if you have enough resources, and make sure the IP addresses used by ray cluster are the same as "
    "VLLM_HOST_IP environment variable specified in each node if you are running on a multi-node.",
]


def test_the_placement_lines_read_are_the_lines_ranked():
    """Two orders of one set: the host command's (its text keys the recordings) and the cause's rank; a line added to
    one alone would be read and never chosen, or chosen and never read."""
    assert sorted(PLACEMENT_STALL_LINES) == sorted(PLACEMENT_STALL_RANK)
    assert len(set(PLACEMENT_STALL_LINES)) == len(PLACEMENT_STALL_LINES)


def test_a_vllm_waiting_for_its_placement_group_is_named_as_the_cause():
    """Issue 44.7: the engine never comes up because Ray cannot give the GPUs; none of these lines is an error line,
    so the last words said only what the error read holds. The error read's window keeps them (apart from its error
    lines): they name the cause first and are never quoted as the last error."""
    spec = EndpointSpec(name="spark-vllm", platform="p", base_url="http://engine.test:1", engine="vllm", model="m",
                        request_timeout_s=1, logs="file:/var/log/vllm.log", host="spark1")
    client = httpx.Client(base_url="http://engine.test:1", transport=httpx.MockTransport(lambda r: httpx.Response(503)))
    adapter = adapter_for(spec, client, read_log_errors=lambda: "\n".join(PLACEMENT))
    words = adapter.last_words()
    assert words.startswith("it waits for GPUs Ray does not give (its placement group): ")
    assert "Waiting for creating a placement group of specs for 10 seconds" in words
    assert "holds no error line since its last start" in words
    silent = adapter_for(spec, client, read_log_errors=lambda: "")
    assert not silent.last_words().startswith("it waits")


def test_the_error_read_keeps_the_placement_lines_apart_from_a_long_traceback(tmp_path):
    """The one error read, run for real on this machine: a traceback of 60 error lines after the wait keeps the last
    40 error lines and, before them, the placement-group lines (`don't have enough GPUs available`, which the old
    separate read's `placement group|reserved number of` missed, included)."""
    log = tmp_path / "vllm.log"
    waits = [RAY_PREFIX.format("WARNING", 1, 1) + "We don't have enough GPUs available in the current node.",
             PLACEMENT[2]]
    frames = [RAY_PREFIX.format("ERROR", 2, 1) + f"Error: frame {n}" for n in range(60)]
    log.write_text("(APIServer pid=1) INFO 12-06 11:11:00 [api_utils.py:1] non-default args: {'model': '/m'}\n"
                   + "\n".join(waits + frames) + "\n")
    result = connect(HostSpec(name="me", platform="p")).run(log_command(f"file:{log}", errors=True))
    assert result.rc == 0 and result.stdout.splitlines() == waits + frames[-40:], result
