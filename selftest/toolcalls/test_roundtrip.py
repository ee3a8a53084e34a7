"""Round trips through a fake engine (httpx.MockTransport): for any schema and conforming value, the streamed
deltas, however they are cut, join to exactly the non-streamed call, and the judge calls it valid and accurate;
a stream cut before its end is caught as invalid."""

from __future__ import annotations

import itertools
import json

import httpx
from hypothesis import example, given, note
from hypothesis import strategies as st

from llmval.engines import adapter_for
from llmval.inventory import EndpointSpec
from llmval.toolcalls import Answer, ExpectedCall, ToolCase, judge
from selftest.toolcalls.strategies import object_schemas_with_values

SPEC = EndpointSpec(name="fake", platform="p", base_url="http://fake.test:1", engine="vllm", model="m")


def _case(schema: dict, value: dict) -> ToolCase:
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    return ToolCase("rt", "flat", [tool], "call f", [ExpectedCall("f", value)], max_tokens=4096)


def fake_engine(arguments: str, cuts: list[int], *, drop_tail: bool = False):
    """A vLLM-shaped chat endpoint that returns one call to `f` with `arguments`, streamed in pieces at `cuts`."""

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if not body.get("stream"):
            return httpx.Response(200, json={"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}}],
                "usage": {"completion_tokens": 10}})
        bounds = [0, *sorted({c for c in cuts if 0 < c < len(arguments)}), len(arguments)]
        pieces = [arguments[a:b] for a, b in itertools.pairwise(bounds)]
        if drop_tail:
            pieces = pieces[:-1] if len(pieces) > 1 else [arguments[:-1]]
        events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]}}]}]
        events += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}]}
                   for p in pieces]
        events += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                   {"choices": [], "usage": {"completion_tokens": max(10, len(pieces) + 1)}}]  # a token a chunk
        text = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events) + "data: [DONE]\n\n"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)

    return handle


def _adapter(handler):
    return adapter_for(SPEC, httpx.Client(base_url="http://fake.test:1", transport=httpx.MockTransport(handler)))


@given(pair=object_schemas_with_values(), cuts=st.lists(st.integers(0, 4000), max_size=12),
       ascii_only=st.booleans())
@example(pair=({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}, {"x": 2**53 + 1}),
         cuts=[1, 2, 3], ascii_only=False)
@example(pair=({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]},
               {"s": '</parameter>"\\\n🚀'}), cuts=[5, 6, 7, 8, 9, 10, 11, 12, 13, 14], ascii_only=True)
def test_stream_join_equals_non_stream(pair, cuts, ascii_only):
    schema, value = pair
    arguments = json.dumps(value, ensure_ascii=ascii_only)
    note(f"arguments={arguments!r}")
    case = _case(schema, value)
    adapter = _adapter(fake_engine(arguments, cuts))
    body = case.request(strict=False, tool_choice="required")
    plain = judge(case, Answer.from_completion(adapter.chat(body).json()), max_tokens=case.max_tokens)
    status, streamed = adapter.chat_stream(body)
    assert status == 200 and streamed.tool_calls[0]["function"]["arguments"] == arguments
    joined = judge(case, Answer.from_stream(streamed), max_tokens=case.max_tokens, reference=plain.calls)
    assert plain.is_accurate and joined.is_accurate, (plain.problems, joined.problems)


@given(pair=object_schemas_with_values(), cuts=st.lists(st.integers(1, 400), min_size=1, max_size=8))
def test_a_stream_cut_short_is_invalid(pair, cuts):
    schema, value = pair
    arguments = json.dumps(value)
    case = _case(schema, value)
    adapter = _adapter(fake_engine(arguments, cuts, drop_tail=True))
    body = case.request(strict=False, tool_choice="required")
    _status, streamed = adapter.chat_stream(body)
    verdict = judge(case, Answer.from_stream(streamed), max_tokens=case.max_tokens)
    note(f"joined={streamed.tool_calls[0]['function']['arguments']!r}")
    assert not verdict.is_valid and {p.kind for p in verdict.problems} & {"truncated", "not_json", "schema"}
