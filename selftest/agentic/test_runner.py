"""AgenticRunner against a fake vLLM-shaped engine (httpx.MockTransport): no network, no model.

The fake's /tokenize is an OFFLINE STAND-IN (whitespace pieces of the JSON request), not a tokenizer; its
"model" answers from a table of the questions' needles, built with the same seeds the grid uses.
"""

from __future__ import annotations

import json

import httpx
import pytest

from llmval.agentic import AgenticRunner, build_transcript
from llmval.agentic.grid import prompt_seed
from llmval.engines import VllmAdapter, adapter_for
from llmval.grid import CellNotMeasured, ServerTokenCounter, render_heatmap, write_grid_json
from llmval.inventory import AgenticSpec, EndpointSpec

ENDPOINT = EndpointSpec(name="fake", platform="p", base_url="http://fake:1", engine="vllm", model="m",
                        max_model_len=4096)


def stand_in_count(body: dict) -> int:
    return len(json.dumps(body["messages"]).split()) + len(json.dumps(body.get("tools") or []).split())


def fake_engine(spec: AgenticSpec, style: str, served_limit: int = 10**9, log: list | None = None):
    """Answers each question with its needle ('right'), its first near-miss ('distractor'), or refuses
    prompts over `served_limit` stand-in tokens as vLLM does."""
    needles = {}
    for kind in spec.needles:
        for length in spec.context_lengths:
            for depth in spec.depths:
                seed = prompt_seed(spec, type("C", (), {"kind": kind, "length": length, "depth": depth})())
                needle = build_transcript(seed, kind, depth, 0).needle
                needles[needle.question] = needle

    def handler(request: httpx.Request) -> httpx.Response:
        if log is not None:
            log.append(request.url.path)
        if request.url.path == "/health":
            return httpx.Response(200)
        body = json.loads(request.content)
        tokens = stand_in_count(body)
        if request.url.path == "/tokenize":
            return httpx.Response(200, json={"count": tokens, "max_model_len": served_limit, "tokens": []})
        if tokens > served_limit:
            return httpx.Response(400, json={"error": {"message": f"This model's maximum context length is "
                                                       f"{served_limit} tokens. However, your request has {tokens} "
                                                       "input tokens.", "type": "BadRequestError"}})
        needle = needles[body["messages"][-1]["content"]]
        value = needle.value if style == "right" else needle.distractors[0]
        arguments = json.dumps({**needle.fixed, needle.argument: value})
        call = {"id": "c1", "type": "function", "function": {"name": needle.tool_name, "arguments": arguments}}
        # about 3 characters a token, plus the call's markup: never fewer tokens than the call has words
        usage = {"prompt_tokens": tokens, "completion_tokens": len(arguments) // 3 + 8}
        if body.get("stream"):
            chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [{**call, "index": 0}]}}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                      {"choices": [], "usage": usage}]
            text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json={"choices": [{"message": {"content": None, "tool_calls": [call]},
                                                      "finish_reason": "tool_calls"}], "usage": usage})

    return handler


def runner_for(spec: AgenticSpec, style: str, **kw) -> AgenticRunner:
    client = httpx.Client(base_url="http://fake:1", transport=httpx.MockTransport(fake_engine(spec, style, **kw)))
    count = ServerTokenCounter(client, endpoint="fake", engine=VllmAdapter, model="m")
    return AgenticRunner(spec, adapter_for(ENDPOINT, client), count)


SPEC = AgenticSpec(endpoint="fake", context_lengths=[1024, 2048], depths=[0.0, 1.0], all_pass_up_to=2048,
                   min_overall=1.0)


def test_a_model_that_carries_the_value_passes_every_cell_in_both_modes(tmp_path):
    runner = runner_for(SPEC, "right")
    results = runner.measure_all()
    assert len(results) == 2 * 2 * 3 * 2 and all(r.is_pass for r in results)
    assert all(g.ok for g in runner.gates())
    document = runner.document()
    assert document["summary"]["prompt_token_offenders"] == []
    assert all(c["trials"][0]["prompt_tokens"] <= c["target_tokens"] for c in document["cells"])
    assert render_heatmap(document, tmp_path).name == "agentic-fake.png"
    assert json.loads(write_grid_json(document, tmp_path).read_text())["summary"]["passed"] == len(results)


def test_both_modes_send_the_same_prompt_built_once():
    log: list[str] = []
    client = httpx.Client(base_url="http://fake:1",
                          transport=httpx.MockTransport(fake_engine(SPEC, "right", log=log)))
    runner = AgenticRunner(SPEC, adapter_for(ENDPOINT, client),
                           ServerTokenCounter(client, endpoint="fake", engine=VllmAdapter, model="m"))
    nonstream, stream = runner.cells[:2]
    tokenized = (runner.measure(nonstream), log.count("/tokenize"))
    runner.measure(stream)
    assert log.count("/tokenize") == tokenized[1]  # no second fit for the streamed cell
    assert runner.results[stream.id].prompt_sha256 == tokenized[0].prompt_sha256


def test_a_model_that_copies_the_near_miss_fails_with_distractor():
    runner = runner_for(SPEC, "distractor")
    results = runner.measure_all()
    assert {r.outcome for r in results} == {"distractor"}
    gates = {g.check: g.ok for g in runner.gates()}
    assert gates == {"accuracy.agentic.all_pass_up_to": False, "accuracy.agentic.min_overall": False,
                     "accuracy.agentic.min_valid": True}  # valid calls, wrong values: recall, not the parser


def test_a_served_context_shorter_than_declared_fails_the_long_cells_naming_the_limit():
    runner = runner_for(SPEC, "right", served_limit=1500)
    results = runner.measure_all()
    long_cells = [r for r in results if r.cell.length == 2048]
    assert {r.outcome for r in long_cells} == {"context_limit"}
    assert all("limit is 1500 tokens" in r.problems[0] for r in long_cells)
    assert all(r.is_pass for r in results if r.cell.length == 1024)
    validity = next(g for g in runner.gates() if g.check == "accuracy.agentic.min_valid")
    assert not validity.ok and validity.observed == "50.0% (12/24)"


def test_cells_past_the_time_budget_could_not_be_measured():
    spec = SPEC.model_copy(update={"budget_s": 1e-9})
    runner = runner_for(spec, "right")
    runner.measure(runner.cells[0])
    with pytest.raises(CellNotMeasured, match="time budget"):
        runner.measure(runner.cells[1])
    with pytest.raises(CellNotMeasured, match="could not be measured"):
        runner.measure_all()


def test_named_tool_choice_names_the_asked_tool():
    from llmval.agentic.grid import build_prompt, request_body

    spec = SPEC.model_copy(update={"tool_choice": "named"})
    cell = runner_for(spec, "right").cells[0]
    prompt = build_prompt(spec, cell, lambda messages, tools: stand_in_count({"messages": messages, "tools": tools}))
    body = request_body(spec, prompt)
    assert body["tool_choice"] == {"type": "function", "function": {"name": prompt.transcript.needle.tool_name}}
    assert [t["function"]["name"] for t in body["tools"]][:3] == ["list_files", "read_file", "run_command"]
