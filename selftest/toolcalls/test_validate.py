"""The judge of one tool-call answer: each failure class is caught and named with an excerpt."""

from __future__ import annotations

import json

import pytest

from llmval.toolcalls import Answer, build_catalogue, judge, tricky_text

CASE = next(c for c in build_catalogue(cases_per_category=1, large_kib=[8]) if c.category == "flat")
GOOD = {"city": CASE.expected[0].arguments["city"], "unit": CASE.expected[0].arguments["unit"]}


def _answer(arguments: str, *, finish="tool_calls", tokens=20, content="") -> Answer:
    return Answer(content, "", [{"id": "c", "type": "function", "function": {"name": "get_weather",
                                                                          "arguments": arguments}}], finish, tokens)


def test_exact_call_is_valid_and_accurate():
    verdict = judge(CASE, _answer(json.dumps(GOOD)), max_tokens=120)
    assert verdict.is_valid and verdict.is_accurate


@pytest.mark.parametrize(("arguments", "kind"), [
    ('"Paris"', "not_object"),                       # seen on the real engine with free (non-strict) tools
    ('{"city": "Paris", "unit": "kelvin"}', "schema"),
    ('{"city": "Paris"}', "schema"),
    ('{"city": "Paris", "unit": "cel', "truncated"),
    ("{'city': 'Paris'}", "not_json"),
])
def test_invalid_arguments_are_named(arguments, kind):
    verdict = judge(CASE, _answer(arguments), max_tokens=120)
    assert not verdict.is_valid and verdict.problems[0].kind == kind, verdict.problems


def test_truncation_masked_as_tool_calls_is_caught():
    verdict = judge(CASE, _answer(json.dumps(GOOD), tokens=120), max_tokens=120)
    assert [p.kind for p in verdict.problems] == ["truncated"]
    assert "finish_reason=tool_calls but completion_tokens=120" in verdict.problems[0].detail


def test_markup_in_content_is_a_leak_with_excerpt():
    verdict = judge(CASE, _answer(json.dumps(GOOD), content='ok <tool_call>\n{"name": "x"}'), max_tokens=120)
    (leak,) = verdict.problems
    assert leak.kind == "markup_leak" and "<tool_call>" in leak.excerpt


def test_no_call_is_invalid():
    verdict = judge(CASE, Answer("I cannot call tools.", "", [], "stop", 5), max_tokens=120)
    assert verdict.problems[0].kind == "no_tool_call"


def test_stream_parity_mismatch():
    verdict = judge(CASE, _answer(json.dumps(GOOD)), max_tokens=120, reference=[("get_weather", {"city": "x"})])
    assert [p.kind for p in verdict.problems] == ["stream_mismatch"] and not verdict.is_valid


def test_stream_divergence_of_values_is_a_note():
    other = [("get_weather", {"city": "Oslo", "unit": GOOD["unit"]})]
    verdict = judge(CASE, _answer(json.dumps(GOOD)), max_tokens=120, reference=other)
    assert verdict.is_valid and "stream_divergence" in [p.kind for p in verdict.problems]


def test_catalogue_is_deterministic_and_large_strings_are_tricky():
    first, second = build_catalogue(large_kib=[8, 64]), build_catalogue(large_kib=[8, 64])
    assert [c.request(strict=True, tool_choice="auto") for c in first] == \
        [c.request(strict=True, tool_choice="auto") for c in second]
    large = [c for c in first if c.category == "large_string"]
    assert [len(c.expected[0].arguments["content"].encode()) // 1024 for c in large] == [8, 64]
    text = tricky_text(8192, __import__("random").Random(1))
    assert all(piece in text for piece in ('"', "\\", "\n", "</parameter>"))
    assert any(ord(ch) > 127 for ch in text)
    parallel = next(c for c in first if c.category == "parallel")
    assert len(parallel.expected) == 5
    assert any(c.expected[0].arguments.get("record_id") == 2**53 + 1 for c in first if c.category == "bigint") or \
        any(abs(c.expected[0].arguments.get("record_id", 0)) >= 2**53 - 7 for c in first if c.category == "bigint")


# ---- the envelope an agent framework needs (issue 42.6) ------------------------------------------------------

def _call(**changes) -> dict:
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(GOOD)}}
    return {k: v for k, v in {**call, **changes}.items() if v is not _DROP}


_DROP = object()


@pytest.mark.parametrize(("call", "said"), [
    (_call(id=_DROP), "no `id` (got None)"),
    (_call(id=""), "no `id` (got '')"),
    (_call(id=7), "no `id` (got 7)"),
    (_call(type=_DROP), "`type` is None, not 'function'"),
    (_call(type="tool"), "`type` is 'tool', not 'function'"),
    (_call(function=_DROP), "`function` is NoneType, not an object"),
    (_call(function={"arguments": json.dumps(GOOD)}), "`function.name` is None"),
    ("get_weather", "a JSON str, not an object"),
], ids=["no-id", "empty-id", "int-id", "no-type", "other-type", "no-function", "no-name", "not-an-object"])
def test_a_call_without_its_envelope_is_invalid_naming_what_is_missing(call, said):
    verdict = judge(CASE, Answer("", "", [call], "tool_calls", 20), max_tokens=120)
    assert not verdict.is_valid and not verdict.is_accurate
    assert any(p.kind == "envelope" and said in p.detail for p in verdict.problems), verdict.problems


def test_two_calls_sharing_an_id_are_invalid_naming_both():
    verdict = judge(CASE, Answer("", "", [_call(), _call()], "tool_calls", 20), max_tokens=120)
    assert [p.detail for p in verdict.problems if p.kind == "envelope"] == [
        "call 1 (get_weather): `id` 'call_1' repeats call 0's: a tool result would answer both"]


def test_a_streamed_call_without_id_and_type_is_not_filled_in():
    """The join keeps what the deltas said: a stream that never sent `id` or `type` fails validity like a body."""
    from llmval.engines import join_chat_stream

    events = [json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"name": "get_weather", "arguments": json.dumps(GOOD)}}]}}]}),
        json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}), "[DONE]"]
    streamed = join_chat_stream(events)
    assert streamed.tool_calls[0]["id"] is None and streamed.tool_calls[0]["type"] is None
    problems = judge(CASE, Answer.from_stream(streamed), max_tokens=120).problems
    assert {p.detail.split(": ", 1)[1] for p in problems if p.kind == "envelope"} == {
        "no `id` (got None): its tool result cannot name the call it answers", "`type` is None, not 'function'"}


def test_an_honest_call_passes_the_envelope():
    verdict = judge(CASE, Answer("", "", [_call()], "tool_calls", 20), max_tokens=120)
    assert verdict.is_valid and verdict.is_accurate, verdict.problems
