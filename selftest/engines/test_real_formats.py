"""Engine-side formats as real deployments print them (issue 13): each input failed before and passes now.

Inline lines are SYNTHESIZED by us in the shapes of the real public outputs in
../shared/reference/real-outputs/ (05_vllm, 04_sglang, 06_ray); the tests that read those outputs themselves
skip, saying so, when that folder is absent.
"""

from __future__ import annotations

import httpx
import pytest

from llmval.core.errors import ParseError
from llmval.engines import adapter_for, parse_sglang_log, parse_vllm_log
from llmval.engines.logs import Unparsed, parse_printed_dict
from llmval.inventory import EndpointSpec, load_inventory
from llmval.launch import error_line
from selftest.engines import fake_sglang
from selftest.strategies import ROOT

REAL_OUTPUTS = next((p / "shared" / "reference" / "real-outputs" for p in ROOT.parents
                     if (p / "shared" / "reference" / "real-outputs").is_dir()), ROOT.parent / "shared" / "reference"
                    / "real-outputs")
GLM51_STARTUP = (REAL_OUTPUTS / "05_vllm"
                 / "rtxpro6000-8gpu_vllm-0.20.2rc1-fork_tp8_mtp3_fp8kv_startup_rtx6kpro-glm51.log")
needs_real_outputs = pytest.mark.skipif(not REAL_OUTPUTS.is_dir(),
                                        reason=f"{REAL_OUTPUTS} is absent (real public outputs not shared here)")

# SYNTHESIZED in the shape of vLLM's `non-default args` with --compilation-config (05_vllm startup log).
ENUM_ARGS = (
    "(APIServer pid=1) INFO 11-30 02:10:01 [utils.py:240] non-default args: {'model_tag': '/models/Q', "
    "'enable_auto_tool_choice': True, 'tool_call_parser': 'qwen3_coder', 'reasoning_parser': 'qwen3', "
    "'tensor_parallel_size': 2, 'distributed_executor_backend': 'ray', "
    "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}, "
    "'compilation_config': {'mode': <CompilationMode.VLLM_COMPILE: 3>, 'cudagraph_mode': "
    "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'dynamic_shapes_config': {'type': "
    "<DynamicShapesType.BACKED: 'backed'>, 'evaluate_guards': False}, "
    "'pass_config': PassConfig(fuse_norm_quant=True)}}\n"
)


def _spec(engine: str) -> EndpointSpec:
    return EndpointSpec(name=f"{engine}-ep", platform="p", base_url="http://engine.test:1", engine=engine,
                        model=fake_sglang.MODEL, request_timeout_s=1)


def _adapter(engine: str, log: str, handler=None):
    client = httpx.Client(base_url="http://engine.test:1",
                          transport=httpx.MockTransport(handler or (lambda r: httpx.Response(404))))
    return adapter_for(_spec(engine), client, read_log=lambda: log)


# ---- vLLM: enum reprs in `non-default args` ---------------------------------------------------------------

def test_enum_reprs_in_non_default_args_are_read_not_dropped():
    vllm = _adapter("vllm", ENUM_ARGS)
    assert vllm.tool_call_parser().value == "qwen3_coder" and vllm.reasoning_parser().value == "qwen3"
    assert vllm.executor_backend().value == "ray"
    assert {k: f.value for k, f in vllm.speculative().items()} == {"algorithm": "mtp", "num_steps": 2}
    config = vllm.log.non_default_args["compilation_config"]
    assert config["cudagraph_mode"] == "CUDAGraphMode.FULL_AND_PIECEWISE"
    assert config["dynamic_shapes_config"]["type"] == "DynamicShapesType.BACKED"
    assert config["pass_config"] == Unparsed("PassConfig(fuse_norm_quant=True)")


def test_unreadable_non_default_args_is_could_not_check_never_none():
    cut_list = "(APIServer pid=1) INFO non-default args: {'tool_call_parser': 'hermes', 'x': [1, 2}\n"
    cut_repr = "(APIServer pid=1) INFO non-default args: {'port': 1, 'c': Foo(a={'b': 2}\n"
    for log in (cut_list, cut_repr):
        vllm = _adapter("vllm", log)
        assert vllm.log.non_default_args_quote and vllm.log.non_default_args_error
        with pytest.raises(ParseError, match="non-default args"):
            vllm.tool_call_parser()
        with pytest.raises(ParseError):
            vllm.speculative()
        with pytest.raises(ParseError):
            vllm.executor_backend()


def test_unparsed_value_of_an_asked_key_is_could_not_check():
    log = "INFO non-default args: {'speculative_config': SpeculativeConfig(method='ngram'), 'port': 1}\n"
    with pytest.raises(ParseError, match="speculative_config"):
        _adapter("vllm", log).speculative()


@needs_real_outputs
def test_real_glm51_startup_with_enum_reprs():
    facts = parse_vllm_log(GLM51_STARTUP.read_text())
    assert not facts.non_default_args_error
    assert facts.tool_call_parser == "glm47" and facts.reasoning_parser == "glm45"
    assert facts.non_default_args["speculative_config"]["num_speculative_tokens"] == 3
    assert (facts.world_size, facts.local_world_size, facts.tensor_parallel_size) == (8, 8, 8)
    vllm = _adapter("vllm", GLM51_STARTUP.read_text())
    assert vllm.nodes().value == 1 and vllm.executor_backend().value == "mp"


def test_printed_dict_round_trips_plain_literals():
    value = {"a": 1, "b": [1, "x,y"], "c": {"d": None, "e": "it's"}, "f": (2, 1)}
    assert parse_printed_dict(repr(value)) == value
    with pytest.raises(ValueError):
        parse_printed_dict("{'a': [1, 2}")


# ---- vLLM: Ray worker prefixes and multi-node without Ray --------------------------------------------------

def test_ray_worker_lines_behind_the_engine_core_prefix_and_the_heads_own_worker():
    # SYNTHESIZED: a two-Spark Ray deployment; the head's own worker prints no ip=, the other one is prefixed.
    log = ("(APIServer pid=1) INFO non-default args: {'tensor_parallel_size': 2, "
           "'distributed_executor_backend': 'ray'}\n"
           "(EngineCore_DP0 pid=1088) (RayWorkerWrapper pid=285) INFO 11-30 02:10:40 [parallel_state.py:1] rank 0\n"
           "(EngineCore_DP0 pid=1088) (RayWorkerWrapper pid=285, ip=192.168.177.12) INFO 11-30 02:10:40 "
           "[custom_all_reduce.py:93] Custom allreduce is disabled because this process group spans across nodes.\n"
           "\x1b[36m(RayWorkerWrapper pid=286, ip=192.168.177.12)\x1b[0m INFO 11-30 02:10:41 [x.py:1] loading\n")
    facts = parse_vllm_log(log)
    assert facts.ray_worker_ips == ("192.168.177.12",) and "RayWorkerWrapper pid=285)" in facts.ray_local_worker_quote
    nodes = _adapter("vllm", log).nodes()
    assert nodes.value == 2 and "head's own node" in nodes.source


def test_multi_node_without_ray_counts_nodes():
    # SYNTHESIZED in the shape of the 05_vllm multiproc_executor line, two nodes with one GPU each.
    by_world = ("INFO non-default args: {'tensor_parallel_size': 2, 'headless': False}\n"
                "(EngineCore_DP0 pid=90) INFO 11-30 [multiproc_executor.py:139] DP group leader: node_rank=0, "
                "node_rank_within_dp=0, master_addr=192.168.177.11, mq_connect_ip=192.168.177.11 (local), "
                "world_size=2, local_world_size=1\n")
    by_arg = "INFO non-default args: {'tensor_parallel_size': 2, 'nnodes': 2, 'node_rank': 0}\n"
    for log in (by_world, by_arg):
        vllm = _adapter("vllm", log)
        assert vllm.nodes().value == 2
        assert vllm.executor_backend().value == "mp"


# ---- SGLang: source-build version, two KV pools --------------------------------------------------------------

def _sglang_info(version: str):
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/server_info":
            return httpx.Response(200, json={**fake_sglang.server_info(), "version": version})
        return httpx.Response(404)
    return handle


POOLS = ("[2026-11-30 03:00:41 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1000000, "
         "K size: 11.25 GB, V size: 11.25 GB\n"
         "[2026-11-30 03:00:44 TP0] Draft KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1000000, "
         "K size: 0.35 GB, V size: 0.35 GB\n")


@pytest.mark.parametrize("version", ["0.0.0.dev1+g4c5e1a2", "0.0.0", "0.5.23"])
def test_sglang_source_build_reads_the_allocation_dtype(version):
    sglang = _adapter("sglang", POOLS, _sglang_info(version))
    sources = [e.source for e in sglang.kv_cache_evidence()]
    assert len(sources) == 2 and any("KV Cache is allocated" in s for s in sources)


def test_sglang_target_and_draft_pools_are_one_source():
    sglang = _adapter("sglang", POOLS, _sglang_info("0.5.23"))
    evidence = sglang.kv_cache_evidence()
    log_sources = [e for e in evidence if e.source.startswith("engine log")]
    assert len(log_sources) == 1 and log_sources[0].resolved == "bfloat16" and "Draft" in log_sources[0].quote
    # without /server_info's state the log alone is one source, so the two-source check cannot pass on it
    assert len(parse_sglang_log(POOLS).kv_allocations) == 2


def test_sglang_pools_that_disagree_are_one_mixed_source():
    mixed = POOLS.replace("Draft KV Cache is allocated. dtype: torch.bfloat16", "Draft KV Cache is allocated. "
                          "dtype: torch.float8_e4m3fn")
    log_sources = [e for e in _adapter("sglang", mixed, _sglang_info("0.5.23")).kv_cache_evidence()
                   if e.source.startswith("engine log")]
    assert [e.resolved for e in log_sources] == ["mixed: bfloat16, fp8"]


# ---- a warning is not the engine's error --------------------------------------------------------------------

def test_ray_future_warning_is_not_the_engines_error():
    # SYNTHESIZED in the shape of Ray's FutureWarning as Python prints it, after the real cause.
    tail = ("(EngineCore_DP0 pid=1088) ERROR 11-30 02:11:02 [core.py:700] ValueError: not enough KV cache blocks\n"
            "/usr/local/lib/python3.12/dist-packages/ray/_private/worker.py:2046: FutureWarning: Tip: In future "
            "versions of Ray, Ray will no longer override accelerator visible devices env var if num_gpus=0 or "
            "num_gpus=None (default). To enable this behavior and turn off this error message, set "
            "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0\n  warnings.warn(\n")
    assert "not enough KV cache blocks" in error_line(tail)


# ---- inventories/spark.toml: the endpoint reads the log its launch writes ------------------------------------

def test_spark_endpoint_reads_the_log_its_launch_step_writes():
    """`vllm serve` runs under `docker exec -d ... > /var/log/llmval/vllm-serve.log` (the container's main process
    is `sleep infinity`, so `docker logs` holds no engine line): the endpoint must read that file on that host."""
    inventory = load_inventory(ROOT / "inventories" / "spark.toml")
    endpoint = inventory.endpoint("spark-vllm")
    serve = next(step for step in inventory.launch.start if "vllm serve" in step.run)
    kind, _, path = (endpoint.logs or "").partition(":")
    assert kind == "file" and f"> {path} " in serve.run and endpoint.host == serve.host
    watched = {w for w in inventory.launch.ready.watch if w.startswith("file:")}
    assert watched == {f"file:{path}@{serve.host}"}


def test_real_local_engine_with_compilation_config_keeps_its_non_default_args():
    """REAL: vLLM 0.32.0 on CPU with --compilation-config prints enum reprs in `non-default args`; before issue 13
    the dict became {} and the parser, speculative method and executor read as None / uni."""
    log = (ROOT / "selftest" / "data" / "engines" / "REAL-vllm-0.32.0-cpu-ngram-spec.log").read_text()
    assert "<CUDAGraphMode.NONE: 0>" in log and "<DynamicShapesType.BACKED: 'backed'>" in log
    vllm = _adapter("vllm", log)
    assert vllm.tool_call_parser().value == "hermes"
    assert {k: f.value for k, f in vllm.speculative().items()} == {"algorithm": "ngram", "num_steps": 4}
    assert vllm.log.non_default_args["compilation_config"]["cudagraph_mode"] == "CUDAGraphMode.NONE"
    assert vllm.executor_backend().value == "uni" and vllm.nodes().value == 1
