"""The agentic grid: which cells an inventory's `[[agentic]]` asks for, each cell's prompt, and results.

A cell is (mode, needle kind, context length, depth). The prompt depends on the inventory's seed and the
cell's kind, length and depth only (not the mode), so the streamed and the non-streamed cell send the same
prompt, and every night sends the same prompts; its SHA-256 is kept with the result to prove it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ..grid import GateVerdict, context_lengths, derive_seed, fit_units, grid_name, prompt_sha256, target_tokens
from ..inventory.accuracy import AgenticSpec
from .scorer import CallScore
from .transcript import NeedleKind, Transcript, TranscriptError, build_transcript

ToolsTokenCounter = Callable[[list[dict], list[dict]], int]
"""Counts a chat request's prompt tokens from its messages and tools (chat template included)."""
STEP_TOKENS_MIN = 40
"""Fewer tokens than any filler step has: sizes the filler stream so that it can fill the budget."""


@dataclasses.dataclass(frozen=True)
class AgenticCell:
    """One cell; `id` is the pytest id (`local-vllm-4096-d50-config-stream`)."""

    grid: str
    mode: str
    kind: NeedleKind
    length: int
    depth: float
    target_tokens: int

    @property
    def id(self) -> str:
        return f"{self.grid}-{self.length}-d{round(self.depth * 100)}-{self.kind}-{self.mode}"


def plan_cells(spec: AgenticSpec, max_model_len: int | None) -> list[AgenticCell]:
    """Every cell, in run order (length, depth, needle kind, mode): the two modes of a prompt run together."""
    lengths = context_lengths("agentic", spec, max_model_len)
    return [AgenticCell(grid_name(spec), mode, kind, length, depth, target_tokens(spec, length, max_model_len))
            for length in lengths for depth in sorted(spec.depths) for kind in spec.needles for mode in spec.modes]


@dataclasses.dataclass(frozen=True)
class AgenticPrompt:
    """A built prompt: the request's messages and tools, where the needle went, what the call must carry."""

    seed: int
    transcript: Transcript
    n_steps: int
    messages: list[dict]
    sha256: str
    calibrated_tokens: int
    actual_depth: float

    @property
    def tools(self) -> list[dict]:
        return self.transcript.tools


def prompt_seed(spec: AgenticSpec, cell: AgenticCell) -> int:
    """The seed of a cell's prompt (the same for both modes)."""
    return derive_seed(spec.seed, "agentic", cell.kind, cell.length, cell.depth)


def build_prompt(spec: AgenticSpec, cell: AgenticCell, count: ToolsTokenCounter) -> AgenticPrompt:
    """The cell's prompt, its filler steps fitted to the cell's budget under `count` (the server's tokenizer)."""
    seed = prompt_seed(spec, cell)
    transcript = build_transcript(seed, cell.kind, cell.depth, stream_steps=cell.target_tokens // STEP_TOKENS_MIN + 8)
    tools = transcript.tools
    n, tokens = fit_units(lambda k: count(transcript.messages(k), tools), cell.target_tokens, len(transcript.steps))
    if n == len(transcript.steps):  # pragma: no cover - STEP_TOKENS_MIN is below every filler step's size
        raise TranscriptError(f"{cell.id}: {n} filler steps hold only {tokens} tokens of {cell.target_tokens}")
    messages = transcript.messages(n)
    return AgenticPrompt(seed=seed, transcript=transcript, n_steps=n, messages=messages,
                         sha256=prompt_sha256([*messages, {"tools": tools}]), calibrated_tokens=tokens,
                         actual_depth=transcript.needle_depth(n))


def request_body(spec: AgenticSpec, prompt: AgenticPrompt) -> dict:
    """The chat-completions body (without model/stream): temperature 0, the spec's tool_choice."""
    choice: object = spec.tool_choice
    if spec.tool_choice == "named":
        choice = {"type": "function", "function": {"name": prompt.transcript.needle.tool_name}}
    tools = [{**t, "function": {**t["function"], "strict": True}} for t in prompt.tools] if spec.strict_tools \
        else prompt.tools
    return {"messages": prompt.messages, "tools": tools, "tool_choice": choice, "temperature": 0,
            "max_tokens": spec.max_tokens}


@dataclasses.dataclass
class AgenticResult:
    """What one cell sent, what came back, and how it scored; `error` when it could not be measured."""

    cell: AgenticCell
    prompt_sha256: str = ""
    expected: str = ""
    calibrated_tokens: int = 0
    prompt_tokens: int | None = None
    """usage.prompt_tokens as the server reported it."""
    n_steps: int = 0
    actual_depth: float = 0.0
    outcome: str = ""
    problems: list[str] = dataclasses.field(default_factory=list)
    observed: str = ""
    finish_reason: str | None = None
    completion_tokens: int | None = None
    elapsed_s: float = 0.0
    error: str | None = None

    @property
    def is_pass(self) -> bool:
        return self.error is None and self.outcome == "exact"

    @property
    def pass_rate(self) -> float | None:
        return None if self.error is not None or not self.outcome else float(self.is_pass)

    def scored(self, score: CallScore) -> AgenticResult:
        self.outcome, self.problems, self.observed = score.outcome, list(score.problems), score.observed
        return self


VALID_OUTCOMES = frozenset({"exact", "distractor", "not_exact", "split", "wrong_argument", "wrong_value",
                            "missing_argument"})
"""Outcomes of one valid call to the asked tool (the value right or not)."""


def validity_gate(spec: AgenticSpec, results: Sequence[AgenticResult], check: str) -> GateVerdict:
    """`min_valid`: the fraction of cells answered with one valid call to the asked tool."""
    invalid = tuple(f"{r.cell.id} ({r.outcome})" for r in results if r.outcome not in VALID_OUTCOMES)
    rate = (len(results) - len(invalid)) / len(results) if results else 0.0
    return GateVerdict(check, f">= {spec.min_valid:.0%} of cells answer one valid call to the asked tool",
                       f"{rate:.1%} ({len(results) - len(invalid)}/{len(results)})",
                       bool(results) and rate >= spec.min_valid, invalid)


def prompt_token_offenders(spec: AgenticSpec, results: list[AgenticResult]) -> list[str]:
    """Cells whose usage.prompt_tokens is off the calibrated count by more than the tolerance (cells the
    server refused have no usage and are judged by their own cell test)."""
    out = []
    for r in results:
        if r.outcome in {"context_limit", "http_error"}:
            continue
        if r.prompt_tokens is None or abs(r.prompt_tokens - r.calibrated_tokens) > \
                spec.prompt_tokens_tolerance * r.calibrated_tokens:
            out.append(f"{r.cell.id}: /tokenize {r.calibrated_tokens}, usage {r.prompt_tokens}")
    return out
