"""Scoring of the one call an agentic cell asks for: its edge cases, each with the outcome that names it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmval.agentic.scorer import score_call, score_http_failure
from llmval.agentic.transcript import build_transcript
from llmval.engines.stream import join_chat_stream
from llmval.toolcalls.validate import Answer

NEEDLE = build_transcript(3, "signature", 0.5, 0).needle  # write_stub(path, signature)
CONFIG = build_transcript(3, "config", 0.5, 0).needle      # set_env(name, value)


def call(name: str, arguments: object, call_id: str = "c1") -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def answer(*calls: dict, content: str = "", finish: str | None = "tool_calls", tokens: int = 40) -> Answer:
    """The calls as an engine answers them: each with an id of its own (`c1`, `c2`, ...)."""
    return Answer(content, "", [{**c, "id": f"c{i}"} if c.get("id") == "c1" else c for i, c in enumerate(calls, 1)],
                  finish, tokens)


def score(ans: Answer, needle=NEEDLE, **kw):
    return score_call(ans, needle, max_tokens=256, **kw)


def test_the_exact_value_in_the_asked_argument_passes():
    result = score(answer(call("write_stub", NEEDLE.expected_arguments)))
    assert result.is_pass and result.outcome == "exact" and not result.problems


def test_a_planted_near_miss_is_named_distractor():
    for wrong in NEEDLE.distractors:
        result = score(answer(call("write_stub", {**NEEDLE.expected_arguments, "signature": wrong})))
        assert (result.is_pass, result.outcome) == (False, "distractor")


def test_the_value_with_extra_text_is_not_exact():
    args = {**NEEDLE.expected_arguments, "signature": NEEDLE.value + ":"}
    assert score(answer(call("write_stub", args))).outcome == "not_exact"


def test_value_split_across_arguments_fails_as_split():
    head, tail = NEEDLE.value.split("(", 1)
    result = score(answer(call("write_stub", {"path": head, "signature": "(" + tail})))
    assert (result.is_pass, result.outcome) == (False, "split")


def test_value_in_the_other_argument_is_wrong_argument():
    result = score(answer(call("write_stub", {"path": NEEDLE.value, "signature": "def f()"})))
    assert result.outcome == "wrong_argument"


def test_a_second_call_fails_even_when_one_call_is_right():
    right = call("write_stub", NEEDLE.expected_arguments)
    result = score(answer(right, call("read_file", {"path": NEEDLE.source})))
    assert (result.is_pass, result.outcome) == (False, "extra_calls")


def test_calling_another_tool_is_wrong_tool():
    assert score(answer(call("read_file", {"path": NEEDLE.source}))).outcome == "wrong_tool"


@pytest.mark.parametrize("leak", ["<tool_call>", "</function>", "<parameter=signature>"])
def test_markup_leaked_into_content_is_invalid_even_with_the_right_call(leak):
    result = score(answer(call("write_stub", NEEDLE.expected_arguments), content=f"sure {leak}"))
    assert result.outcome == "invalid" and any("markup_leak" in p for p in result.problems)


def test_schema_violations_are_invalid():
    as_number = score(answer(call("set_env", {"name": CONFIG.fixed["name"], "value": int(CONFIG.value)})), CONFIG)
    assert as_number.outcome == "invalid" and "schema" in as_number.problems[0]
    missing = score(answer(call("set_env", {"name": CONFIG.fixed["name"]})), CONFIG)
    assert missing.outcome == "invalid"


def test_a_truncated_stream_is_invalid_not_a_near_miss():
    raw = json.dumps(NEEDLE.expected_arguments)
    events = [json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "write_stub", "arguments": raw[:30]}}]}}]}),
        json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": raw[30:60]}}]}}]})]  # the connection dropped: no finish, no [DONE]
    result = score(Answer.from_stream(join_chat_stream(events)), is_stream=True)
    assert result.outcome == "invalid"
    assert any("truncated" in p for p in result.problems)


def test_a_whole_stream_without_finish_reason_is_truncated():
    events = [json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c1", "type": "function",
         "function": {"name": "write_stub", "arguments": json.dumps(NEEDLE.expected_arguments)}}]}}]})]
    result = score(Answer.from_stream(join_chat_stream(events)), is_stream=True)
    assert result.outcome == "invalid" and "without a finish_reason" in result.problems[-1]
    assert score(Answer.from_stream(join_chat_stream(events))).is_pass  # non-stream answers have no such rule


def test_length_cut_under_finish_reason_tool_calls_is_truncated():
    result = score(answer(call("write_stub", NEEDLE.expected_arguments), tokens=256))
    assert result.outcome == "invalid" and "truncated" in result.problems[0]


def test_no_call_at_all_is_invalid():
    assert score(answer(content=NEEDLE.value, finish="stop")).outcome == "invalid"


def test_context_limit_refusals_are_named_with_the_served_limit():
    vllm = ('{"error":{"message":"This model\'s maximum context length is 4096 tokens. However, your request has '
            '8100 input tokens. Please reduce the length of the input messages.","type":"BadRequestError"}}')
    result = score_http_failure(400, vllm)
    assert result.outcome == "context_limit" and "4096" in result.problems[0]
    sglang = "The input (9000 tokens) is longer than the model's context length (8192 tokens)."
    assert score_http_failure(400, sglang).outcome == "context_limit"
    assert score_http_failure(500, "internal error").outcome == "http_error"
    assert score_http_failure(400, "tool_choice required is not supported").outcome == "http_error"


@given(st.data())
def test_any_cut_of_the_value_over_two_arguments_is_split_never_a_pass(data):
    needle = build_transcript(data.draw(st.integers(0, 2**32), label="seed"), "signature", 0.5, 0).needle
    cut = data.draw(st.integers(1, len(needle.value) - 1), label="cut")
    args = {"path": needle.value[:cut], "signature": needle.value[cut:]}
    result = score(answer(call("write_stub", args)), needle)
    assert (result.is_pass, result.outcome) == (False, "split")


def test_the_right_call_without_id_or_type_is_invalid_naming_its_envelope():
    """Issue 42.6: the needle exactly right, in a call an agent framework cannot answer (no id, no type)."""
    right = call("write_stub", NEEDLE.expected_arguments)
    result = score(answer({"function": right["function"]}))
    assert (result.is_pass, result.outcome) == (False, "invalid")
    assert any(p.startswith("envelope: call 0 (write_stub): no `id`") for p in result.problems), result.problems
    assert any("`type` is None, not 'function'" in p for p in result.problems), result.problems
