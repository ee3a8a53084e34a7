"""A model behind the declared name is RED naming both sources (issue 42.5): `/v1/models` lists the declared name,
and the engine's own word on the weights it loaded (SGLang's `/server_info` or `/get_model_info` `model_path`,
vLLM's `/v1/models` `root`) is another model's. The honest controls (a path that names no other family, or the
declared `model_path`) hold.

Each test runs the serving contract's model checks (in a subprocess) against a HostileServer; the SGLang answers are
SYNTHESIZED in the shapes of SGLang 0.5.17's on the lent H200 (REAL-h200-sglang-0.5.17-healthy), the vLLM ones in
vLLM 0.32's.
"""

from __future__ import annotations

import json

import pytest

from selftest.hostile.harness import run_contract
from selftest.hostile.server import MODEL, HostileServer, answer

GLM = "/models/zai-org/GLM-4.7-Flash"
CHECK = "serving.model.identity"


def _sglang(model_path: str, *, model_info: str | None = None) -> dict:
    routes = {"/health": answer(b"", content_type="text/plain"),
              "/v1/models": answer({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "sglang",
                                                                "root": MODEL, "parent": None,
                                                                "max_model_len": 8192}]}),
              "/server_info": answer({"model_path": model_path, "served_model_name": MODEL, "version": "0.5.17",
                                      "dtype": "bfloat16", "internal_states": [{}]})}
    if model_info is not None:
        routes["/get_model_info"] = answer({"model_path": model_info, "is_generation": True})
    return routes


def _vllm_root(root: str) -> dict:
    return {"/v1/models": answer({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "vllm",
                                                              "root": root, "max_model_len": 8192}]})}


def _verdicts(run) -> dict[str, dict]:
    tests = json.loads(run.files["reports/results.json"])["tests"]
    return {v["check"]: v for t in tests for v in t.get("verdicts", [])}


def _run(tmp_path, routes: dict, **endpoint) -> dict[str, dict]:
    with HostileServer(routes) as server:
        run = run_contract(server, tmp_path, endpoint=endpoint, args=("-k", "served_model"))
    assert "Traceback" not in run.terminal, run.terminal[-3000:]
    return _verdicts(run)


@pytest.mark.subprocess
@pytest.mark.parametrize(("engine", "routes", "said"), [
    ("sglang", _sglang(GLM), f"/server_info served_model_name/model_path loaded {GLM!r} (glm)"),
    ("sglang", _sglang("/models/smollm2-135m", model_info=GLM), f"/model_info model_path loaded {GLM!r}"),
    ("vllm", _vllm_root(GLM), f"GET /v1/models root loaded {GLM!r} (glm)"),
], ids=["sglang-server-info", "sglang-get-model-info", "vllm-root"])
def test_a_name_over_another_models_weights_is_red_naming_both(tmp_path, engine, routes, said):
    verdicts = _run(tmp_path, routes, engine=engine)
    assert verdicts["serving.model.id"]["cause"] == "held"  # the name alone says nothing else
    identity = verdicts[CHECK]
    assert identity["cause"] == "broken" and said in identity["observed"] and "smollm" in identity["observed"], \
        identity


@pytest.mark.subprocess
def test_weights_other_than_the_declared_model_path_are_red(tmp_path):
    verdicts = _run(tmp_path, _sglang("/tmp/model"), engine="sglang", expect={"model_path": "/srv/SmolLM2-135M"})
    identity = verdicts[CHECK]
    assert identity["cause"] == "broken" and "not the declared model_path '/srv/SmolLM2-135M'" in \
        identity["observed"], identity


@pytest.mark.subprocess
@pytest.mark.parametrize(("engine", "routes", "keys"), [
    ("sglang", _sglang("/tmp/model"), {}),                                          # as the REAL H200 recording
    ("sglang", _sglang("/srv/models/HuggingFaceTB/SmolLM2-135M-Instruct"),
     {"expect": {"model_path": "HuggingFaceTB/SmolLM2-135M-Instruct"}}),
    ("vllm", _vllm_root(".cache/models/smollm2-135m-instruct"), {}),               # as the REAL local engine
], ids=["sglang-tmp-model", "sglang-declared-path", "vllm-local-root"])
def test_honest_weights_hold(tmp_path, engine, routes, keys):
    identity = _run(tmp_path, routes, engine=engine, **keys)[CHECK]
    assert identity["cause"] == "held", identity
