"""NiahRunner against a fake OpenAI-compatible server (httpx.MockTransport): no network, no model.

The fake's /tokenize is the OFFLINE STAND-IN counter (whitespace pieces), not a real tokenizer.
"""

from __future__ import annotations

import json
import re

import httpx
import pytest

from llmval.engines import SglangAdapter, VllmAdapter
from llmval.grid import CellNotMeasured, ServerTokenCounter, render_heatmap, write_grid_json
from llmval.inventory import EndpointSpec, NiahSpec
from llmval.needle import NiahRunner, whitespace_token_count

QUESTION_RE = re.compile(r"special magic \w+ for (?P<key>[\w-]+) mentioned")


def fake_engine(answer_style: str, calls: list[str]):
    """A vLLM-shaped engine whose 'model' answers the asked key's value (or every value it saw)."""

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        body = json.loads(request.content)
        if request.url.path == "/tokenize":
            count = whitespace_token_count(body["messages"])
            return httpx.Response(200, json={"count": count, "max_model_len": 8192, "tokens": []})
        content = body["messages"][0]["content"]
        key = QUESTION_RE.search(content)["key"]
        value = re.search(rf"for {re.escape(key)} is: (\S+)\.", content)[1]
        if answer_style == "everything":
            answer = " ".join(re.findall(r"is: (\S+)\.", content))
        else:
            answer = f"The special magic number for {key} is {value}."
        usage = {"prompt_tokens": whitespace_token_count(body["messages"]), "completion_tokens": 9}
        return httpx.Response(200, json={"choices": [{"message": {"content": answer}, "finish_reason": "stop"}],
                                         "usage": usage})

    return handler


def _runner(spec: NiahSpec, style: str, calls: list[str]) -> NiahRunner:
    endpoint = EndpointSpec(name="fake", platform="p", base_url="http://fake:1", engine="vllm", model="m",
                            max_model_len=8192)
    client = httpx.Client(base_url="http://fake:1", transport=httpx.MockTransport(fake_engine(style, calls)))
    count = ServerTokenCounter(client, endpoint="fake", engine=VllmAdapter, model="m")
    return NiahRunner(spec, endpoint, client, count)


def test_a_model_that_answers_the_needle_passes_every_cell(tmp_path):
    spec = NiahSpec(endpoint="fake", context_lengths=[300, 600], depths=[0.0, 0.5, 1.0],
                    variants=["plain", "hard", "prefix_cache"], values=["number", "uuid"], all_pass_up_to=600)
    runner = _runner(spec, "needle", [])
    results = runner.measure_all()
    assert all(r.is_pass for r in results)
    document = runner.document()
    assert document["complete"] and all(g["ok"] for g in document["gates"])
    assert document["summary"]["prompt_token_offenders"] == []
    assert {t["prompt_tokens"] <= c["target_tokens"] for c in document["cells"] for t in c["trials"]} == {True}
    assert render_heatmap(document, tmp_path).stat().st_size > 0
    assert json.loads(write_grid_json(document, tmp_path).read_text())["summary"]["passed"] == len(results)


def test_a_model_that_lists_every_value_fails_where_there_are_several():
    spec = NiahSpec(endpoint="fake", context_lengths=[400], depths=[0.5], variants=["plain", "hard"])
    by_variant = {r.cell.variant: r for r in _runner(spec, "everything", []).measure_all()}
    assert by_variant["plain"].is_pass  # only one value in the haystack: listing everything is the needle
    assert not by_variant["hard"].is_pass
    assert by_variant["hard"].trials[0].ruler_score == 100.0  # RULER's substring score would have passed it


def test_each_cell_is_measured_once_per_run():
    calls: list[str] = []
    spec = NiahSpec(endpoint="fake", context_lengths=[300], depths=[0.5])
    runner = _runner(spec, "needle", calls)
    cell = runner.cells[0]
    runner.measure(cell)
    runner.measure_all()
    assert calls.count("/v1/chat/completions") == 1


def test_prefix_cache_questions_share_one_haystack():
    spec = NiahSpec(endpoint="fake", context_lengths=[500], depths=[0.0, 0.5, 1.0], variants=["prefix_cache"])
    runner = _runner(spec, "needle", [])
    runner.measure_all()
    # the prompts differ only in the question: same unit count, and the same text up to the question
    assert len({r.trials[0].n_units for r in runner.results.values()}) == 1


def test_cells_past_the_time_budget_could_not_be_measured():
    spec = NiahSpec(endpoint="fake", context_lengths=[300], depths=[0.0, 1.0], budget_s=1e-9)
    runner = _runner(spec, "needle", [])
    runner.measure(runner.cells[0])
    with pytest.raises(CellNotMeasured, match="time budget"):
        runner.measure(runner.cells[1])
    with pytest.raises(CellNotMeasured, match="could not be measured"):
        runner.measure_all()


def test_sglang_counts_prompt_tokens_plus_the_measured_chat_overhead():
    """SGLang's /tokenize takes a prompt only: the chat template's overhead comes from one real chat request."""
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if request.url.path == "/tokenize":
            assert "messages" not in body
            return httpx.Response(200, json={"tokens": list(range(len(body["prompt"].split())))})
        return httpx.Response(200, json={"choices": [{"message": {"content": "OK"}, "finish_reason": "length"}],
                                         "usage": {"prompt_tokens": 3 + 11}})  # "Reply with OK." is 3 pieces

    client = httpx.Client(base_url="http://fake:1", transport=httpx.MockTransport(handler))
    count = ServerTokenCounter(client, endpoint="fake", engine=SglangAdapter, model="m")
    assert count([{"role": "user", "content": "a b c d e"}]) == 5 + 11
    assert count([{"role": "user", "content": "a b"}]) == 2 + 11
    assert sum(1 for b in seen if "max_tokens" in b) == 1  # the overhead is measured once
    assert seen[-1] == {"model": "m", "prompt": "a b"}
