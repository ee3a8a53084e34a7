"""Judge one tool-call answer: validity (what any client needs) and accuracy (the calls asked for).

Valid: at least one tool call; every call has the envelope an agent framework needs to run it and answer it
(`call_envelope_problems`: a non-empty string `id`, unique in the answer, that its tool result names back;
`type` "function"; a `function` object whose `name` is a tool the request declared), and its `arguments`
is a JSON object that validates against its tool's schema (jsonschema); the answer is not truncated, even
when the engine says `finish_reason="tool_calls"` (vLLM masks `length` that way, engine.md §2.6):
`completion_tokens` must be below `max_tokens`; no tool-call markup leaks into `content` or reasoning; a
streamed answer joins to the same calls as the non-streamed one. Accurate: valid, and the calls equal the
expected calls exactly (names and argument values; order-free for parallel calls).

An answer with `finish_reason="abort"` was stopped by the engine itself (SGLang aborts a constrained generation
when its grammar backend rejects a token): that is the one problem named, `engine_abort`, and what it left
behind (no tool call, markup in content, half a JSON object, a stream that differs) is quoted in its detail as
its consequences, not counted as findings of their own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from jsonschema import Draft202012Validator

from ..core.errors import ParseError
from ..core.jsontext import read_json
from ..engines.stream import REASONING_KEYS
from .catalogue import MARKUP_SENTINELS, ToolCase

EXCERPT_CHARS = 160
ABORT_FINISH_REASON = "abort"
"""The finish_reason of a generation the engine stopped itself (SGLang's FINISH_ABORT; vLLM's FinishReason.ABORT)."""


@dataclass(frozen=True)
class Problem:
    """One reason an answer is not valid or not accurate, with a short quoted excerpt."""

    kind: str
    """engine_abort, no_tool_call, http_error, envelope, not_json, not_object, schema, truncated, markup_leak,
    stream_mismatch, unknown_tool, wrong_calls; stream_divergence is a note (valid, same call shape, other
    values). engine_abort stands alone: the others it caused are in its detail."""
    detail: str
    excerpt: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}" + (f" | {self.excerpt!r}" if self.excerpt else "")


@dataclass(frozen=True)
class Answer:
    """The parts of a chat completion a judge needs, from either a JSON body or a joined stream."""

    content: str
    reasoning: str
    tool_calls: list[dict]
    finish_reason: str | None
    completion_tokens: int | None

    @classmethod
    def from_completion(cls, body: dict) -> Answer:
        choice = (body.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        reasoning = next((message[k] for k in REASONING_KEYS if message.get(k)), "")
        return cls(message.get("content") or "", reasoning or "", message.get("tool_calls") or [],
                   choice.get("finish_reason"), (body.get("usage") or {}).get("completion_tokens"))

    @classmethod
    def from_stream(cls, chat) -> Answer:
        return cls(chat.content, chat.reasoning, chat.tool_calls, chat.finish_reason,
                   (chat.usage or {}).get("completion_tokens"))


@dataclass(frozen=True)
class Verdict:
    """The judgement of one answer."""

    is_valid: bool
    is_accurate: bool
    problems: list[Problem] = field(default_factory=list)
    calls: list[tuple[str, object]] = field(default_factory=list)
    """(name, parsed arguments) as they came back."""

    @property
    def is_engine_abort(self) -> bool:
        """The engine stopped this generation itself: its calls are no reference for another answer."""
        return any(p.kind == "engine_abort" for p in self.problems)


def excerpt(text: str, needle: str = "", limit: int = EXCERPT_CHARS) -> str:
    """A short quote of `text`, around `needle` when given."""
    if needle and needle in text:
        at = text.index(needle)
        start = max(0, at - limit // 2)
        return ("…" if start else "") + text[start:start + limit] + ("…" if start + limit < len(text) else "")
    return text[:limit] + ("…" if len(text) > limit else "")


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


CALL_TYPE = "function"
"""The one `type` of a tool call the OpenAI chat API defines: a client dispatches on it."""


def call_envelope_problems(calls: list[object]) -> list[Problem]:
    """What keeps an agent framework from running `calls` and answering them, one Problem per call at fault: the
    call is no JSON object; its `id` is missing, empty or not a string (the tool result names the call it answers by
    `tool_call_id`; an OpenAI client refuses a call without one), or repeats another call's; its `type` is not
    "function"; its `function` is no object with a string `name`. The one rule every judge of tool calls applies
    (the catalogue sweep, the agentic grid, correctness under load: all through `judge`).

    >>> [p.detail for p in call_envelope_problems([{"type": "function", "function": {"name": "f"}}])]
    ['call 0 (f): no `id` (got None): its tool result cannot name the call it answers']
    """
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for index, call in enumerate(calls):
        if not isinstance(call, dict):
            problems.append(Problem("envelope", f"call {index}: a JSON {type(call).__name__}, not an object",
                                    excerpt(_canonical(call))))
            continue
        function = call.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        where = f"call {index} ({name})"
        faults = []
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id.strip():
            faults.append(f"no `id` (got {call_id!r}): its tool result cannot name the call it answers")
        elif call_id in seen:
            faults.append(f"`id` {call_id!r} repeats call {seen[call_id]}'s: a tool result would answer both")
        else:
            seen[call_id] = index
        if call.get("type") != CALL_TYPE:
            faults.append(f"`type` is {call.get('type')!r}, not {CALL_TYPE!r}")
        if not isinstance(function, dict):
            faults.append(f"`function` is {type(function).__name__}, not an object")
        elif not isinstance(name, str) or not name:
            faults.append(f"`function.name` is {name!r}, not a tool's name")
        problems += [Problem("envelope", f"{where}: {fault}", excerpt(_canonical(call))) for fault in faults]
    return problems


def judge(case: ToolCase, answer: Answer, *, max_tokens: int, reference: list[tuple[str, object]] | None = None
          ) -> Verdict:
    """Judge `answer` to `case`; `reference` (the non-streamed calls) turns on the stream-parity check."""
    problems: list[Problem] = []
    calls: list[tuple[str, object]] = []
    if not answer.tool_calls:
        problems.append(Problem("no_tool_call", f"finish_reason={answer.finish_reason}",
                                excerpt(answer.content or answer.reasoning)))
    problems += call_envelope_problems(answer.tool_calls)
    for index, call in enumerate(answer.tool_calls):
        if not isinstance(call, dict):
            continue  # named by its envelope
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        name, raw = function.get("name"), function.get("arguments")
        where = f"call {index} ({name})"
        if not isinstance(raw, str):
            problems.append(Problem("not_json", f"{where}: arguments is {type(raw).__name__}, not a JSON string"))
            calls.append((name, raw))
            continue
        try:
            args = read_json(raw, f"{where} arguments")
        except ParseError as error:
            kind = "truncated" if raw.strip() and raw.strip()[-1] not in "}]" else "not_json"
            position = error.position if error.position is not None else 0
            problems.append(Problem(kind, f"{where}: arguments do not parse ({error.reason} of {len(raw)} chars)",
                                    excerpt(raw[max(0, position - 80):])))
            calls.append((name, raw))
            continue
        calls.append((name, args))
        if not isinstance(args, dict):
            problems.append(Problem("not_object", f"{where}: arguments are a JSON {type(args).__name__}",
                                    excerpt(raw)))
            continue
        schema = case.schema_for(name) if name else None
        if schema is None:
            problems.append(Problem("unknown_tool", f"{where}: no such tool in the request", excerpt(raw)))
            continue
        errors = sorted(Draft202012Validator(schema).iter_errors(args), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            path = "/".join(str(p) for p in first.absolute_path) or "<root>"
            problems.append(Problem("schema", f"{where}: {len(errors)} schema error(s); at {path}: "
                                    f"{first.message[:200]}", excerpt(raw)))
    if answer.finish_reason == "length":
        problems.append(Problem("truncated", "finish_reason=length", excerpt(answer.content[-EXCERPT_CHARS:])))
    elif answer.completion_tokens is not None and answer.completion_tokens >= max_tokens:
        problems.append(Problem("truncated", f"finish_reason={answer.finish_reason} but completion_tokens="
                                f"{answer.completion_tokens} reached max_tokens={max_tokens}"))
    for field_name, text in (("content", answer.content), ("reasoning", answer.reasoning)):
        leaked = [s for s in MARKUP_SENTINELS if s in text]
        if leaked:
            problems.append(Problem("markup_leak", f"{field_name} holds {leaked}", excerpt(text, leaked[0])))
    notes: list[Problem] = []
    if reference is not None:
        got = sorted(_canonical([n, a]) for n, a in calls)
        want = sorted(_canonical([n, a]) for n, a in reference)
        if got != want and _shape(calls) == _shape(reference) and not problems:
            # Same calls and keys, other values: two generations differed (batching on a shared engine makes
            # temperature 0 non-deterministic); value corruption by a parser shows in the accuracy check.
            notes.append(Problem("stream_divergence", "streamed values differ from the non-streamed answer",
                                 excerpt(f"stream={got} non-stream={want}")))
        elif got != want:
            problems.append(Problem("stream_mismatch", "streamed deltas do not join to the non-streamed calls",
                                    excerpt(f"stream={got} non-stream={want}")))
    if answer.finish_reason == ABORT_FINISH_REASON:
        return Verdict(False, False, [_engine_abort(answer, problems)], calls)
    is_valid = not problems
    wrong = []
    if is_valid:
        got = sorted(_canonical([n, a]) for n, a in calls)
        want = sorted(_canonical([e.name, e.arguments]) for e in case.expected)
        if got != want:
            wrong.append(Problem("wrong_calls", f"{len(calls)} call(s), expected {len(case.expected)}; values differ",
                                 excerpt(f"got={got}")))
    return Verdict(is_valid, is_valid and not wrong, problems + wrong + notes, calls)


def _engine_abort(answer: Answer, consequences: list[Problem]) -> Problem:
    """The engine's abort as the one problem, what it left behind folded into the detail."""
    tokens = "" if answer.completion_tokens is None else f" after {answer.completion_tokens} completion token(s)"
    detail = f"finish_reason={ABORT_FINISH_REASON}{tokens}: the engine stopped the generation itself"
    if consequences:
        detail += "; consequences: " + ", ".join(dict.fromkeys(p.kind for p in consequences))
    functions = [c["function"] for c in answer.tool_calls
                 if isinstance(c, dict) and isinstance(c.get("function"), dict)]
    arguments = next((f["arguments"] for f in functions if isinstance(f.get("arguments"), str)), "")
    return Problem("engine_abort", detail, excerpt(answer.content or answer.reasoning or arguments))


def _shape(calls: list[tuple[str, object]]) -> list[str]:
    """Names and argument keys of the calls, order-free: what a parser decides, whatever the model chose."""
    return sorted(_canonical([n, sorted(a) if isinstance(a, dict) else type(a).__name__]) for n, a in calls)
