"""Which model is served is proven by the name and the loaded weights, from every source the engine has (issue 42.5):
a name over another model's weights (the Sparks' stale GLM behind the declared alias), two paths that disagree, or
weights other than the declared `model_path` are contradictions naming both sides; honest deployments (the REAL
H200 recordings' `/tmp/model`, the local engine's `.cache/models/smollm2-135m-instruct`) have none.

The answers below are SYNTHESIZED in the shapes of the REAL ones (SGLang 0.5.17's /server_info, vLLM 0.24.0's
/v1/models and startup log on the lent H200), with other models' paths put in.
"""

from __future__ import annotations

import httpx
import pytest

from llmval.engines import SglangAdapter, VllmAdapter
from llmval.engines.identity import ModelEvidence, contradictions, families, path_parts, same_weights
from llmval.inventory import EndpointSpec

GLM = "/models/zai-org/GLM-4.7-Flash"


def test_the_sparks_story_a_qwen_name_over_glm_weights_is_a_contradiction_naming_both():
    found = contradictions("qwen3.5-122b", None, [ModelEvidence("/v1/models", ("qwen3.5-122b",)),
                                                   ModelEvidence("/server_info model_path", path=GLM)])
    assert found == [f"/server_info model_path loaded {GLM!r} (glm), not the served name 'qwen3.5-122b' (qwen)"]


@pytest.mark.parametrize(("model", "path"), [
    ("smollm2", "/tmp/model"),                                # the REAL H200 recordings: the path names no family
    ("smollm2", ".cache/models/smollm2-135m-instruct"),       # the REAL local engine
    ("qwq-32b", "/models/Qwen/QwQ-32B"),                      # a family's other name
    ("chat", "/models/meta-llama/Llama-3.1-8B-Instruct"),     # a name that names no family
    ("llama-3.1-8b", "/root/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B/snapshots/0e9e39f"),
])
def test_honest_names_and_paths_agree(model, path):
    assert contradictions(model, None, [ModelEvidence("/v1/models", (model,)), ModelEvidence("root", path=path)]) \
        == []


def test_two_sources_naming_other_weights_contradict_each_other():
    found = contradictions("smollm2", None, [ModelEvidence("GET /v1/models root", ("smollm2",), "/tmp/model"),
                                             ModelEvidence("engine log: engine config", path="/tmp/other-model")])
    assert found == ["engine log: engine config loaded '/tmp/other-model' but GET /v1/models root '/tmp/model'"]


def test_the_declared_model_path_pins_the_weights_whole_or_its_tail():
    evidence = [ModelEvidence("root", path="/models/Qwen/Qwen3.5-122B-A10B")]
    assert contradictions("qwen3.5-122b", "Qwen/Qwen3.5-122B-A10B", evidence) == []
    assert contradictions("x", "/tmp/model", [ModelEvidence("root", path="/tmp/model/")]) == []
    found = contradictions("smollm2", "/tmp/model", [ModelEvidence("root", path="/tmp/glm")])
    assert found == ["root loaded '/tmp/glm', not the declared model_path '/tmp/model'"]


def test_a_name_source_that_serves_another_name_contradicts_unless_it_is_an_alias():
    evidence = [ModelEvidence("/server_info served_model_name", ("glm-4.7-flash",))]
    assert contradictions("qwen3.5-122b", None, evidence) == [
        "/server_info served_model_name serves ['glm-4.7-flash'], not the declared 'qwen3.5-122b'"]
    assert contradictions("qwen", None, evidence, aliases=["glm-4.7-flash"]) == []


def test_families_paths_and_tails():
    assert families("GLM-4.7-Flash") == {"glm"} and families("chatglm3-6b") == {"glm"}
    assert families("Mixtral-8x7B") == families("mistral-7b") == {"mistral"} and families("graphite-tuned") == set()
    assert path_parts("./models/Qwen3-8B/") == ("models", "qwen3-8b")
    assert same_weights("Qwen/Qwen3-8B", "/srv/models/qwen/qwen3-8b") and not same_weights("Qwen3-8B", "B")


# ---- what each adapter reads -------------------------------------------------------------------------------------

def _spec(engine: str, model: str = "qwen3.5-122b") -> EndpointSpec:
    return EndpointSpec(name="e", platform="p", base_url="http://engine.test:1", engine=engine, model=model)


def _client(routes: dict[str, object]) -> httpx.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        body = routes.get(request.url.path)
        return httpx.Response(404, json={"detail": "Not Found"}) if body is None else httpx.Response(200, json=body)
    return httpx.Client(base_url="http://engine.test:1", transport=httpx.MockTransport(handle))


def test_sglang_names_its_server_info_and_model_info_paths():
    routes = {"/health": {}, "/v1/models": {"object": "list", "data": [
        {"id": "qwen3.5-122b", "object": "model", "owned_by": "sglang", "root": "qwen3.5-122b"}]},
        "/server_info": {"version": "0.5.17", "model_path": "/models/Qwen/Qwen3.5-122B", "served_model_name":
                         "qwen3.5-122b"},
        "/get_model_info": {"model_path": GLM, "is_generation": True}}
    adapter = SglangAdapter(_spec("sglang"), _client(routes))
    evidence = adapter.model_evidence()
    assert [(e.source, e.served_names, e.path) for e in evidence] == [
        ("GET /v1/models", ("qwen3.5-122b",), None),  # SGLang's card root is the served name, not a path
        ("/server_info served_model_name/model_path", ("qwen3.5-122b",), "/models/Qwen/Qwen3.5-122B"),
        ("/model_info model_path", (), GLM)]
    assert contradictions("qwen3.5-122b", None, evidence) == [
        f"/model_info model_path loaded {GLM!r} but /server_info served_model_name/model_path "
        "'/models/Qwen/Qwen3.5-122B'",
        f"/model_info model_path loaded {GLM!r} (glm), not the served name 'qwen3.5-122b' (qwen)"]


def test_vllm_names_its_card_root_and_both_log_lines():
    log = ("(APIServer pid=922) INFO 12-01 10:58:49 [api_utils.py:273] non-default args: {'model': '/tmp/model', "
           "'served_model_name': ['qwen3.5-122b']}\n"
           "(EngineCore pid=1119) INFO 12-01 10:59:28 [core.py:114] Initializing a V1 LLM engine (v0.24.0) with "
           f"config: model='{GLM}', speculative_config=None, dtype=torch.bfloat16, served_model_name=glm-4.7-flash, "
           "x=y\n")
    routes = {"/health": {}, "/v1/models": {"object": "list", "data": [
        {"id": "qwen3.5-122b", "object": "model", "owned_by": "vllm", "root": "/tmp/model"}]}}
    adapter = VllmAdapter(_spec("vllm"), _client(routes), read_log=lambda: log)
    evidence = adapter.model_evidence()
    assert [(e.served_names, e.path) for e in evidence] == [
        (("qwen3.5-122b",), "/tmp/model"), (("qwen3.5-122b",), "/tmp/model"), (("glm-4.7-flash",), GLM)]
    found = contradictions("qwen3.5-122b", None, evidence)
    assert "engine log: engine config model/served_model_name serves ['glm-4.7-flash'], not the declared " \
           "'qwen3.5-122b'" in found
    assert any(f"loaded {GLM!r} but GET /v1/models root '/tmp/model'" in f for f in found)
    without_log = VllmAdapter(_spec("vllm"), _client(routes)).model_evidence()
    assert [(e.source, e.path) for e in without_log] == [("GET /v1/models root", "/tmp/model")]


def test_sglang_names_its_logged_server_args_where_the_log_is_declared():
    routes = {"/health": {}, "/v1/models": {"object": "list", "data": [
        {"id": "qwen3.5-122b", "object": "model", "owned_by": "sglang", "root": "qwen3.5-122b"}]},
        "/server_info": {"version": "0.5.17", "model_path": "/models/Qwen/Qwen3.5-122B", "served_model_name":
                         "qwen3.5-122b"}}
    log = (f"[2026-12-02 00:06:10] server_args=ServerArgs(model_path='{GLM}', tokenizer_path='{GLM}', "
           "served_model_name='qwen3.5-122b', kv_cache_dtype='auto')\n")
    evidence = SglangAdapter(_spec("sglang"), _client(routes), read_log=lambda: log).model_evidence()
    assert evidence[-1].source == "engine log: server_args model_path/served_model_name"
    assert (evidence[-1].served_names, evidence[-1].path) == (("qwen3.5-122b",), GLM)
    assert f"engine log: server_args model_path/served_model_name loaded {GLM!r} but /server_info " \
           "served_model_name/model_path '/models/Qwen/Qwen3.5-122B'" in contradictions("qwen3.5-122b", None, evidence)


def test_a_card_root_other_than_its_id_names_the_weights_on_any_engine():
    """SGLang's root repeats the served name (REAL 0.5.17); one that says another model's path is a path source."""
    routes = {"/health": {}, "/v1/models": {"object": "list", "data": [
        {"id": "qwen3.5-122b", "object": "model", "owned_by": "sglang", "root": GLM}]},
        "/server_info": {"version": "0.5.17"}}
    evidence = SglangAdapter(_spec("sglang"), _client(routes)).model_evidence()
    assert (evidence[0].source, evidence[0].path) == ("GET /v1/models root", GLM)
    assert contradictions("qwen3.5-122b", None, evidence) == [
        f"GET /v1/models root loaded {GLM!r} (glm), not the served name 'qwen3.5-122b' (qwen)"]
