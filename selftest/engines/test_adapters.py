"""Adapters over httpx.MockTransport: the /server_info fallback, engine detection, acceptance deltas, and a
dead endpoint that fails fast for the rest of the run."""

from __future__ import annotations

import httpx
import pytest

from llmval.core.errors import EndpointError
from llmval.engines import EndpointState, NotExposed, adapter_for, detect_engine, parse_metrics
from llmval.engines.base import SERVER_ERROR_CHECK
from llmval.inventory import EndpointSpec
from selftest.engines import fake_sglang


def _spec(engine: str, **changes) -> EndpointSpec:
    return EndpointSpec(name=f"{engine}-ep", platform="p", base_url="http://engine.test:1", engine=engine,
                        model=fake_sglang.MODEL, request_timeout_s=1, **changes)


def _adapter(engine: str, handler, **kwargs):
    client = httpx.Client(base_url="http://engine.test:1", transport=httpx.MockTransport(handler))
    return adapter_for(_spec(engine), client, **kwargs)


def test_sglang_falls_back_to_get_server_info():
    adapter = _adapter("sglang", fake_sglang.handler("healthy", legacy=True))
    assert adapter.attention_backend().source == "/get_server_info attention_backend"
    assert adapter.version.value == fake_sglang.VERSION


def test_sglang_kv_evidence_from_scheduler_state_and_log():
    adapter = _adapter("sglang", fake_sglang.handler("fp8-kv"), read_log=lambda: fake_sglang.startup_log("fp8-kv"))
    assert [e.resolved for e in adapter.kv_cache_evidence()] == ["fp8", "fp8"]
    assert any("fp8_e4m3" in q for q in adapter.kv_fp8_quotes())


@pytest.mark.parametrize("engine", ["sglang", "openai"])
def test_detect_engine(engine):
    handler = fake_sglang.handler("healthy")

    def plain(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "m", "owned_by": "someone"}]})
        return httpx.Response(404)

    adapter = _adapter(engine, handler if engine == "sglang" else plain)
    assert detect_engine(adapter).value == engine


def test_vllm_accept_length_is_one_plus_accepted_per_draft():
    adapter = _adapter("vllm", lambda r: httpx.Response(404))
    before = parse_metrics("vllm:spec_decode_num_drafts_total 100\nvllm:spec_decode_num_accepted_tokens_total 150\n")
    after = parse_metrics("vllm:spec_decode_num_drafts_total 300\nvllm:spec_decode_num_accepted_tokens_total 550\n")
    assert adapter.accept_length(before, after).value == 3.0
    with pytest.raises(NotExposed, match="spec_decode"):
        adapter.accept_length(parse_metrics(""), parse_metrics(""))


def test_sglang_accept_length_prefers_verify_call_deltas():
    adapter = _adapter("sglang", fake_sglang.handler())
    before = parse_metrics("sglang:generation_tokens_total 1000\nsglang:spec_verify_calls_total 400\n")
    after = parse_metrics("sglang:generation_tokens_total 1600\nsglang:spec_verify_calls_total 600\n"
                          "sglang:spec_accept_length 2.5\n")
    assert adapter.accept_length(before, after).value == 3.0


def test_a_hung_endpoint_is_named_by_the_short_health_probe_then_fails_fast():
    calls = []

    def hang(request: httpx.Request) -> httpx.Response:
        calls.append((request.url.path, request.extensions["timeout"]["read"]))
        raise httpx.ReadTimeout("timed out", request=request)

    state = EndpointState()
    adapter = _adapter("vllm", hang, state=state)
    with pytest.raises(EndpointError, match=r"stopped answering .*/health: no answer within 5 s"):
        adapter.metrics()
    assert calls == [("/health", 5.0)] and state.dead_reason  # the probe's own timeout, not request_timeout_s
    with pytest.raises(EndpointError, match="not sent: the endpoint stopped answering"):
        adapter.get_json("/v1/models")
    assert calls == [("/health", 5.0)]
    assert "no answer" in adapter.probe_health().value


def test_a_request_timing_out_after_a_good_probe_is_confirmed_dead_by_one_more_probe():
    calls = []

    def hang_after_probe(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) == 1:
            return httpx.Response(200)
        raise httpx.ReadTimeout("timed out", request=request)

    state = EndpointState()
    adapter = _adapter("vllm", hang_after_probe, state=state)
    with pytest.raises(EndpointError, match="no answer within 1 s"):
        adapter.metrics()
    assert calls == ["/health", "/metrics", "/health"] and state.dead_reason


def test_one_slow_request_does_not_kill_a_live_endpoint():
    def slow_chat(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/chat/completions":
            raise httpx.ReadTimeout("timed out", request=request)
        return httpx.Response(200)

    adapter = _adapter("vllm", slow_chat)
    with pytest.raises(EndpointError):
        adapter.generate("hi")
    assert adapter.state.dead_reason is None and adapter.probe_health().value == 200


def test_sglang_parsers_from_model_info_when_server_info_lacks_them():
    base = fake_sglang.handler("healthy")

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/server_info":
            info = fake_sglang.server_info("healthy")
            info.pop("tool_call_parser")
            return httpx.Response(200, json=info)
        if request.url.path == "/model_info":
            return httpx.Response(200, json={"model_path": "/m", "tool_call_parser": "qwen3_coder"})
        return base(request)

    fact = _adapter("sglang", handle).tool_call_parser()
    assert (fact.value, fact.source) == ("qwen3_coder", "/model_info tool_call_parser")


def test_vllm_speculative_config_from_non_default_args():
    log = ("INFO non-default args: {'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}, "
           "'tensor_parallel_size': 2, 'distributed_executor_backend': 'ray'}\n")
    adapter = _adapter("vllm", lambda r: httpx.Response(404), read_log=lambda: log)
    facts = adapter.speculative()
    assert (facts["algorithm"].value, facts["num_steps"].value) == ("mtp", 3)
    assert adapter.executor_backend().value == "ray"


@pytest.mark.parametrize("module", ["llmval.engines", "llmval.toolcalls"])
def test_public_surface_is_curated_and_sorted(module):
    import importlib

    package = importlib.import_module(module)
    kind = {True: 0}  # constants, then classes, then functions (ruff RUF022 order)
    assert package.__all__ == sorted(package.__all__,
                                     key=lambda n: (kind.get(n.isupper(), 1 if n[0].isupper() else 2), n))
    assert all(hasattr(package, name) for name in package.__all__)


def test_a_death_after_a_generation_answered_5xx_depends_on_that_generation():
    """REAL-h200-vllm-ray-legacy: vLLM answered the first chat completion HTTP 500 (`EngineCore encountered an
    issue`), then its port closed. One fault: the requests the death stops depend on the check that judged the 500
    (`serving.generation.tokens` on the endpoint), and their shared cause says the death came after it."""
    def fail_then_die(request: httpx.Request) -> httpx.Response:
        if "dead" in calls:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        if request.url.path == "/v1/chat/completions":
            return httpx.Response(500, json={"error": {"message": "EngineCore encountered an issue."}})
        return httpx.Response(200)

    calls: list[str] = []
    adapter = _adapter("vllm", fail_then_die)
    with pytest.raises(EndpointError, match="HTTP 500"):
        adapter.generate("hi")
    assert adapter.state.server_error == "POST /v1/chat/completions: HTTP 500"
    calls.append("dead")  # from here on nothing answers /health
    with pytest.raises(EndpointError) as died:
        adapter.request("GET", "/metrics")
    assert died.value.depends_on == (f"{SERVER_ERROR_CHECK}@{adapter.spec.name}",)
    assert "after a generation request answered POST /v1/chat/completions: HTTP 500" in died.value.reason
    with pytest.raises(EndpointError) as not_sent:  # every later request: the same dependency
        adapter.request("GET", "/v1/models")
    assert not_sent.value.depends_on == died.value.depends_on


def test_a_death_without_a_5xx_before_it_depends_on_nothing_more():
    def refused_after_probe(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/metrics":
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        if request.url.path == "/health" and calls:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        calls.append(request.url.path)
        return httpx.Response(200)

    calls: list[str] = []
    adapter = _adapter("vllm", refused_after_probe)
    with pytest.raises(EndpointError) as died:
        adapter.request("GET", "/metrics")
    assert adapter.state.dead_reason and died.value.depends_on == () and "after a generation" not in died.value.reason
