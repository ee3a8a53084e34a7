"""Judge-free scoring of the one tool call an agentic cell asks for.

Validity comes from the tool-call judge (`toolcalls.validate.judge`): arguments are a JSON object valid
against the tool's schema, not truncated (even under `finish_reason="tool_calls"`), no call markup leaked
into content or reasoning. A streamed answer that ended without a finish reason is truncated too. Then the
answer passes when it is exactly one call, to the asked tool, whose needle argument equals the value
character for character. A miss is named by its outcome:

- `exact` (the pass), `distractor` (a planted near-miss: the other file's or the older value),
  `not_exact` (the value with something around it), `split` (the value spread over several arguments),
  `wrong_argument` (the value in another argument), `wrong_value`, `missing_argument`;
- `extra_calls`, `wrong_tool`, `invalid` (JSON, schema, truncation, markup; the problems say which);
- `context_limit` (the server refused the prompt as longer than its context), `http_error`;
- `not_retrieval`: before any of these, the answer is not a retrieval at all (`llmval.grid.not_a_retrieval`: it
  repeats the transcript, or has more text than `max_tokens` or its usage allow), whatever its call carries.

>>> from llmval.toolcalls.validate import Answer
>>> from llmval.agentic.transcript import build_transcript
>>> needle = build_transcript(1, "error_code", 0.5, 0).needle
>>> call = {"function": {"name": "open_incident", "arguments": json.dumps(needle.expected_arguments)}}
>>> score_call(Answer("", "", [call], "tool_calls", 30), needle, max_tokens=256).outcome
'exact'
"""

from __future__ import annotations

import dataclasses
import json
import re

from ..grid import generated_text, not_a_retrieval
from ..toolcalls.catalogue import MARKUP_SENTINELS, ExpectedCall, ToolCase
from ..toolcalls.validate import Answer, excerpt, judge
from .transcript import AGENT_TOOLS, Needle

CONTEXT_LIMIT_RE = re.compile(r"maximum context length|max_model_len|context length|context window|"
                              r"prompt is too long|too many tokens|exceeds? the (?:model'?s? )?(?:maximum|max)",
                              re.IGNORECASE)
"""What vLLM ("This model's maximum context length is 4096 tokens"), SGLang ("...is longer than the model's
context length") and OpenAI-style servers answer to a prompt longer than the served context."""
SERVED_LIMIT_RE = re.compile(r"maximum context length is (?P<tokens>\d+)|context length \(?(?P<tokens2>\d+)",
                             re.IGNORECASE)
PASS = "exact"


@dataclasses.dataclass(frozen=True)
class CallScore:
    """The verdict on one answer to an agentic cell."""

    outcome: str
    problems: tuple[str, ...] = ()
    observed: str = ""
    """The needle argument as it came back (or the calls, or the server's error), shortened."""

    @property
    def is_pass(self) -> bool:
        return self.outcome == PASS


def tool_case(needle: Needle, tools: list[dict], max_tokens: int) -> ToolCase:
    """The transcript's call as a tool-call catalogue case, so the catalogue's judge checks validity."""
    return ToolCase(f"agentic-{needle.kind}", "agentic", tools, needle.question,
                    [ExpectedCall(needle.tool_name, needle.expected_arguments)], max_tokens)


def score_http_failure(status: int, text: str) -> CallScore:
    """An answer that was not 200: the context limit named as such, anything else as an HTTP error."""
    if status in (400, 413, 422) and CONTEXT_LIMIT_RE.search(text):
        match = SERVED_LIMIT_RE.search(text)
        served = f"; the server's limit is {match.group('tokens') or match.group('tokens2')} tokens" if match else ""
        return CallScore("context_limit", (f"HTTP {status}: the prompt is longer than the served context{served}",),
                         excerpt(text, "context", 240))
    return CallScore("http_error", (f"HTTP {status}",), excerpt(text, limit=240))


def score_call(answer: Answer, needle: Needle, *, max_tokens: int, tools: list[dict] | None = None,
               is_stream: bool = False, prompt: str = "") -> CallScore:
    """Score one answer (see the module docstring); `prompt`: the transcript's text (`llmval.grid.prompt_text`)."""
    tools = tools if tools is not None else [*AGENT_TOOLS, needle.tool]
    why = not_a_retrieval(generated_text(answer.content, answer.reasoning, answer.tool_calls), prompt=prompt,
                          max_tokens=max_tokens, completion_tokens=answer.completion_tokens)
    if why:
        return CallScore("not_retrieval", (why,), excerpt(generated_text(answer.content, answer.reasoning,
                                                                         answer.tool_calls), needle.value, 240))
    verdict = judge(tool_case(needle, tools, max_tokens), answer, max_tokens=max_tokens)
    problems = [str(p) for p in verdict.problems if p.kind not in {"wrong_calls", "stream_divergence"}]
    if is_stream and answer.finish_reason is None:
        problems.append("truncated: the stream ended without a finish_reason")
    calls = verdict.calls
    shown = excerpt(json.dumps([[n, a] for n, a in calls], ensure_ascii=False), needle.value, 240)
    if problems:
        return CallScore("invalid", tuple(problems), shown)
    if len(calls) > 1:
        return CallScore("extra_calls", (f"{len(calls)} calls; one call to {needle.tool_name} was asked for",), shown)
    name, arguments = calls[0]
    if name != needle.tool_name:
        return CallScore("wrong_tool", (f"called {name}, not {needle.tool_name}",), shown)
    assert isinstance(arguments, dict)  # judge: a valid answer's arguments are a JSON object
    got = arguments.get(needle.argument)
    observed = excerpt(json.dumps(got, ensure_ascii=False), limit=240)
    return CallScore(_value_outcome(got, arguments, needle), _markup(got), observed)


def _markup(value: object) -> tuple[str, ...]:
    leaked = [s for s in MARKUP_SENTINELS if isinstance(value, str) and s in value]
    return (f"markup in the argument: {leaked}",) if leaked else ()


def _value_outcome(got: object, arguments: dict, needle: Needle) -> str:
    value = needle.value
    if got == value:
        return PASS
    if got is None:
        return "missing_argument"
    text = got if isinstance(got, str) else json.dumps(got)
    if text.strip() in needle.distractors or any(d in text for d in needle.distractors):
        return "distractor"
    if value in text:
        return "not_exact"
    strings = [v if isinstance(v, str) else json.dumps(v) for v in arguments.values()]
    others = [s for k, s in zip(arguments, strings, strict=True) if k != needle.argument]
    if any(value in s for s in others):
        return "wrong_argument"
    if _is_split(value, strings):
        return "split"
    return "wrong_value"


def _is_split(value: str, strings: list[str]) -> bool:
    """The value is not inside any one argument, but a run of arguments, joined, spells it."""
    squeeze = "".join(value.split())
    for start in range(len(strings)):
        for end in range(start + 2, len(strings) + 1):
            for joiner in ("", " ", ", "):
                joined = joiner.join(strings[start:end])
                if value in joined or squeeze in "".join(joined.split()):
                    return True
    return False
