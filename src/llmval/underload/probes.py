"""The probes asked idle and under load: sampled NIAH cells and tool-call catalogue cases, each judged strictly.

A probe is built once (its prompt fixed: a NIAH haystack is fitted to its budget with the server's `/tokenize`
before the first ask), then asked several times with the very same request at temperature 0. Each ask gives a
`ProbeAnswer`: the exact text that came back and the judged answer, by the judges the accuracy checks use:

- NIAH (`llmval.needle.score_answer`): `is_correct` = the answer is a retrieval at all (not an echo of the
  prompt, not longer than max_tokens or its usage allow: `llmval.grid.not_a_retrieval`), the expected needle
  value is in it and no other value-shaped string or planted value is; `is_valid` is the same;
- tool calls (`llmval.toolcalls.judge`): `is_valid` = a call whose arguments are a JSON object valid against
  the tool's schema, untruncated, no markup leak, and no more text than max_tokens or its usage allow (the same
  rule); `is_correct` = valid and exactly the expected calls (names and argument values).

    probes = niah_probes(endpoint, spec, client) + tool_probes(adapter, spec)
    answer = probes[0].ask()      # ProbeAnswer(probe_id, text, is_valid, is_correct, judged, ...)
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Protocol

import httpx

from ..core.errors import EndpointError, LlmvalError
from ..engines import EngineAdapter, adapter_class
from ..grid import ServerTokenCounter, ask, generated_text, not_a_retrieval, prompt_text
from ..inventory import EndpointSpec, NiahSpec
from ..inventory.perf import CorrectnessSpec
from ..io.answers import ChatCompletion, checked, parse_json
from ..needle import build_trial, score_answer
from ..needle.grid import Cell, TrialPrompt, plan_cells
from ..toolcalls import Answer, ToolCase, build_catalogue, judge

TEXT_LIMIT = 2000
"""Characters of an answer's text kept in the report (the whole text is compared before it is cut)."""


@dataclass(frozen=True)
class ProbeAnswer:
    """One ask of one probe: what came back, exactly, and how it was judged (`error`: it could not be asked)."""

    probe_id: str
    text: str
    """The exact answer: a NIAH reply's content; a tool-call answer's calls (name, raw arguments) and content."""
    is_valid: bool
    is_correct: bool
    judged: str
    """The judged answer in words: `found 4417702`, `answered '99999' (expected 4417702)`, `valid, exact: ...`."""
    elapsed_s: float = 0.0
    error: str | None = None

    def as_json(self) -> dict:
        return {"probe": self.probe_id, "text": self.text[:TEXT_LIMIT], "text_chars": len(self.text),
                "is_valid": self.is_valid, "is_correct": self.is_correct, "judged": self.judged,
                "elapsed_s": round(self.elapsed_s, 3), "error": self.error}


class Probe(Protocol):
    """A fixed request and its judge."""

    id: str
    kind: str
    """`niah` or `toolcall`."""

    def ask(self) -> ProbeAnswer: ...


def _failed(probe_id: str, error: LlmvalError, began: float) -> ProbeAnswer:
    return ProbeAnswer(probe_id, "", False, False, "not asked", time.monotonic() - began, error=str(error))


class NiahProbe:
    """One plain NIAH cell (one trial), its prompt built once."""

    kind = "niah"

    def __init__(self, endpoint: EndpointSpec, spec: NiahSpec, cell: Cell, prompt: TrialPrompt, client: httpx.Client):
        self.endpoint, self.spec, self.cell, self.prompt, self.client = endpoint, spec, cell, prompt, client
        self.id = f"niah {cell.id}"

    def ask(self) -> ProbeAnswer:
        began = time.monotonic()
        try:
            answer = ask(self.client, endpoint=self.endpoint.name, engine=adapter_class(self.endpoint),
                         model=self.endpoint.model, messages=self.prompt.messages, max_tokens=self.spec.max_tokens)
        except LlmvalError as error:
            return _failed(self.id, error, began)
        score = score_answer(answer.content, self.prompt.expected, self.prompt.kind, self.prompt.planted,
                             prompt=prompt_text(self.prompt.messages), max_tokens=self.spec.max_tokens,
                             completion_tokens=answer.completion_tokens, generated=answer.generated)
        said = " ".join(answer.content.split())
        judged = (f"found {self.prompt.expected}" if score.is_pass else
                  f"not a retrieval: {score.not_retrieval}" if score.not_retrieval else
                  f"missed: answered {said[-80:]!r} (expected {self.prompt.expected}"
                  + (f", also {', '.join(score.others)}" if score.others else "") + ")")
        return ProbeAnswer(self.id, answer.content, score.is_pass, score.is_pass, judged, time.monotonic() - began)


def niah_probes(endpoint: EndpointSpec, spec: CorrectnessSpec, client: httpx.Client) -> list[NiahProbe]:
    """The plain, number-valued NIAH cells of `spec.niah_lengths` x `spec.niah_depths` (the same prompts as the
    [[niah]] grid's cells of those lengths and seed), their haystacks fitted now with the server's tokenizer."""
    if not spec.niah_depths:
        return []
    niah = NiahSpec(endpoint=endpoint.name, context_lengths=sorted(spec.niah_lengths), depths=spec.niah_depths,
                    variants=["plain"], values=["number"], trials=1, seed=spec.niah_seed)
    count = ServerTokenCounter(client, endpoint=endpoint.name, engine=adapter_class(endpoint), model=endpoint.model)
    cells = plan_cells(niah, endpoint.max_model_len)
    return [NiahProbe(endpoint, niah, cell, build_trial(niah, cell, 0, count), client) for cell in cells]


def _calls_text(answer: Answer) -> str:
    calls = [[(c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments")]
             for c in answer.tool_calls]
    return json.dumps({"calls": calls, "content": answer.content}, ensure_ascii=False)


class ToolCallProbe:
    """One catalogue case, asked non-streamed with the endpoint's variant and tool_choice."""

    kind = "toolcall"

    def __init__(self, adapter: EngineAdapter, case: ToolCase, *, variant: str, tool_choice: str):
        self.adapter, self.case, self.variant, self.tool_choice = adapter, case, variant, tool_choice
        self.id = f"toolcall {variant}/{case.id}"

    def ask(self) -> ProbeAnswer:
        began = time.monotonic()
        body = self.case.request(strict=self.variant == "strict", tool_choice=self.tool_choice)
        try:
            response = self.adapter.chat(body)
        except LlmvalError as error:
            return _failed(self.id, error, began)
        took = time.monotonic() - began
        if response.status_code != 200:
            text = f"HTTP {response.status_code}: {response.text[:300]}"
            return ProbeAnswer(self.id, text, False, False, f"invalid: {text}", took)
        try:
            what = f"probe {self.id}"
            answer = Answer.from_completion(checked(ChatCompletion, parse_json(response.text, what), what))
        except (EndpointError, ValueError, AttributeError, TypeError) as error:
            return ProbeAnswer(self.id, response.text[:TEXT_LIMIT], False, False,
                               f"invalid: not a chat completion ({type(error).__name__})", took)
        verdict = judge(self.case, answer, max_tokens=self.case.max_tokens)
        calls = ", ".join(f"{name}({json.dumps(args, ensure_ascii=False)[:120]})" for name, args in verdict.calls)
        # the counts over everything generated; the echo rule over the text beside the calls only (the catalogue's
        # prompts are short, and an argument may rightly quote them: "send the message '...'")
        generated = generated_text(answer.content, answer.reasoning, answer.tool_calls)
        why = not_a_retrieval(generated, prompt="", max_tokens=self.case.max_tokens,
                              completion_tokens=answer.completion_tokens) or \
            not_a_retrieval(generated_text(answer.content, answer.reasoning), prompt=prompt_text(body["messages"]),
                            max_tokens=None)
        if why:
            return ProbeAnswer(self.id, _calls_text(answer), False, False, f"invalid (not generated as asked): {why}",
                               took)
        state = ("valid, exact" if verdict.is_accurate else "valid, other values" if verdict.is_valid else
                 f"invalid ({verdict.problems[0].kind})" if verdict.problems else "invalid")
        return ProbeAnswer(self.id, _calls_text(answer), verdict.is_valid, verdict.is_accurate,
                           f"{state}: {calls or 'no call'}", took)


def tool_probes(adapter: EngineAdapter, spec: CorrectnessSpec) -> list[ToolCallProbe]:
    """`spec.tool_cases_per_category` catalogue cases of each of `spec.tool_categories` (seed 0, as the sweep's),
    asked with the endpoint's strict variant when it declares one (else its first) and its tool_choice."""
    if not spec.tool_categories:
        return []
    gates = adapter.spec.tool_calls
    if not gates.variants:
        return []
    variant = "strict" if "strict" in gates.variants else gates.variants[0]
    cases = build_catalogue(cases_per_category=spec.tool_cases_per_category, categories=tuple(spec.tool_categories),
                            parallel_calls=gates.parallel_calls)
    return [ToolCallProbe(adapter, case, variant=variant, tool_choice=gates.tool_choice) for case in cases]
