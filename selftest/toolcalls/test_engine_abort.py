"""An answer the engine aborted (finish_reason "abort") is one problem, the abort, named first with the engine's
own hint; what the abort left behind (no tool call, markup in content, half a call in the stream) is folded into
its detail. Input: SYNTHESIZED-sglang-0.5.17-toolcall-abort.json, the shape issue 30 item 3 quotes from a REAL
SGLang 0.5.17 (the REAL recording is to come)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from llmval.engines import adapter_for
from llmval.inventory import EndpointSpec
from llmval.toolcalls import Answer, build_catalogue, judge, run_case, run_sweep

ABORTED = json.loads((Path(__file__).parents[1] / "data" / "engines"
                      / "SYNTHESIZED-sglang-0.5.17-toolcall-abort.json").read_text(encoding="utf-8"))
SPEC = EndpointSpec(name="kpro6-sglang", platform="p", base_url="http://fake.test:1", engine="sglang", model="m")
FLAT = next(c for c in build_catalogue(cases_per_category=1, large_kib=[]) if c.category == "flat")


def _aborting_sglang(request: httpx.Request) -> httpx.Response:
    """Every chat completion answers as the SGLang of issue 30 did: aborted mid-call, stream and non-stream."""
    if request.url.path != "/v1/chat/completions":
        return httpx.Response(200, json={})
    if not json.loads(request.content).get("stream"):
        return httpx.Response(200, json=ABORTED["nonstream"])
    text = "".join(f"data: {event}\n\n" for event in ABORTED["stream_events"])
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)


def test_an_aborted_answer_is_the_engines_abort_with_its_consequences_folded():
    verdict = judge(FLAT, Answer.from_completion(ABORTED["nonstream"]), max_tokens=FLAT.max_tokens)
    (abort,) = verdict.problems
    assert not verdict.is_valid and abort.kind == "engine_abort", verdict.problems
    assert abort.detail == ("finish_reason=abort after 8 completion token(s): the engine stopped the generation "
                            "itself; consequences: no_tool_call, markup_leak")
    assert abort.excerpt.startswith('<tool_call>{"name":"get_weather",<|endoftext|>')


def test_a_sweep_against_the_aborting_engine_counts_only_aborts_and_gives_sglangs_hint(tmp_path):
    adapter = adapter_for(SPEC, httpx.Client(base_url="http://fake.test:1", transport=httpx.MockTransport(
        _aborting_sglang)))
    result = run_sweep(adapter, [FLAT], variants=["strict"], tool_choice="required", failures_dir=tmp_path)
    cell = result.cell("strict", "flat")
    # Before: {'no_tool_call': 1, 'markup_leak': 1, 'not_json': 1, 'stream_mismatch': 1}, the abort unnamed.
    assert (cell.samples, cell.valid, cell.problems) == (2, 0, {"engine_abort": 2})
    assert cell.examples[0].startswith("engine_abort: finish_reason=abort after 8 completion token(s)")
    saved = json.loads((tmp_path / "strict-flat-0-stream.json").read_text(encoding="utf-8"))
    assert saved["problems"][0]["detail"].endswith("consequences: not_json")
    hint = result.hint(cell, "the usual hint")
    assert "Grammar accept_token failed" in hint and "--grammar-backend" in hint
    assert result.hint(result.cell("strict", "nested"), "the usual hint") == "the usual hint"


def test_a_stream_after_an_aborted_non_stream_answer_is_judged_on_its_own():
    good = json.dumps({"city": FLAT.expected[0].arguments["city"], "unit": FLAT.expected[0].arguments["unit"]})
    events = [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "type": "function",
                                                                   "function": {"name": "get_weather",
                                                                                "arguments": good}}]}}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
              {"choices": [], "usage": {"completion_tokens": 12}}]

    def aborts_once_then_streams(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/chat/completions" and json.loads(request.content).get("stream"):
            text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)
        return _aborting_sglang(request)

    adapter = adapter_for(SPEC, httpx.Client(base_url="http://fake.test:1", transport=httpx.MockTransport(
        aborts_once_then_streams)))
    (_, plain, _), (_, streamed, _) = run_case(adapter, FLAT, variant="strict", tool_choice="required",
                                               failures_dir=None)
    # The aborted answer's (no) calls are no reference: the streamed call is not a stream_mismatch against them.
    assert [p.kind for p in plain.problems] == ["engine_abort"]
    assert streamed.is_accurate, streamed.problems
