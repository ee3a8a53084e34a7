"""Accuracy gates of an endpoint: the needle-in-a-haystack grid and the long-context agentic tool-call grid.

Both are grids (`GridSpec`: the fields and rules every grid kind's section shares, as `llmval.grid` is what every
grid shares); each kind adds what it varies and overrides what it defaults otherwise.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from ._base import Spec
from .values import Name, Seconds


class GridSpec(Spec):
    """What every accuracy grid section declares: its endpoint, the lengths and depths of its cells, its seed, the
    pass gates over its cells, the smoke cells, the token margins and its time budget."""

    min_context_tokens: ClassVar[int] = 128
    """The shortest context length a cell of the kind can be built at (with the reason, `min_context_reason`)."""
    min_context_reason: ClassVar[str] = ""

    endpoint: Name
    name: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,64}$")
    """Optional label, added to test ids, when one endpoint has several grids."""
    context_lengths: list[Annotated[int, Field(le=2**24)]] = Field([], max_length=64)
    depths: list[float] = Field([0.0, 0.25, 0.5, 0.75, 1.0], max_length=101)
    seed: int = Field(0, ge=0, le=2**32 - 1)
    min_overall: float = Field(0.95, ge=0, le=1)
    """Minimum fraction of passing cells over the whole grid."""
    all_pass_up_to: int | None = Field(None, ge=1, le=2**24)
    """Every cell at or below this context length must pass; misses above it only count in min_overall."""
    smoke_context_lengths: list[Annotated[int, Field(ge=1, le=2**24)]] = Field([], max_length=64)
    max_tokens: int = Field(64, ge=8, le=2**20)
    margin_tokens: int = Field(16, ge=0, le=2**20)
    prompt_tokens_tolerance: float = Field(0.01, ge=0, le=0.5)
    """usage.prompt_tokens must be within this fraction of the calibrated /tokenize count."""
    budget_s: Seconds | None = None
    """Wall-time bound of the grid; cells not started within it are errors (could not check)."""

    @field_validator("depths")
    @classmethod
    def _depths_are_fractions(cls, depths: list[float]) -> list[float]:
        bad = [d for d in depths if not 0 <= d <= 1]
        if bad:
            raise ValueError(f"depths are fractions of the haystack in [0, 1]; got {bad}")
        if len(set(depths)) != len(depths) or not depths:
            raise ValueError(f"depths must be distinct and not empty; got {depths}")
        return depths

    @field_validator("context_lengths")
    @classmethod
    def _lengths_are_distinct(cls, lengths: list[int]) -> list[int]:
        if len(set(lengths)) != len(lengths) or any(n < cls.min_context_tokens for n in lengths):
            raise ValueError(f"context lengths must be distinct and at least {cls.min_context_tokens} tokens"
                             f"{cls.min_context_reason}; got {lengths}")
        return lengths

    @model_validator(mode="after")
    def _smoke_lengths_in_grid(self) -> Self:
        if self.context_lengths and (extra := sorted(set(self.smoke_context_lengths) - set(self.context_lengths))):
            raise ValueError(f"smoke_context_lengths {extra} are not in context_lengths {self.context_lengths}")
        return self


class NiahSpec(GridSpec):
    """The needle-in-a-haystack grid (context lengths × depths) and its gates.

    Cells are (variant, value kind, context length, depth); each cell runs `trials` prompts and passes
    when every trial passes. Prompts are seeded from `seed`, so every run asks the same questions.
    """

    context_lengths: list[Annotated[int, Field(le=2**24)]] = Field([], max_length=64)
    """Prompt lengths in tokens; empty: a spread up to the served max_model_len. A length that leaves no
    room for `max_tokens` under max_model_len is filled to max_model_len - max_tokens - margin_tokens."""
    depths: list[float] = Field([0.0, 0.25, 0.5, 0.75, 1.0], max_length=101)
    """Needle positions as fractions of the haystack (0 = first sentence, 1 = after the last)."""
    trials: int = Field(1, ge=1, le=1000)
    variants: list[Literal["plain", "hard", "prefix_cache"]] = ["plain"]
    """plain: one needle in generated prose; hard: one needle among needle-shaped distractors;
    prefix_cache: one needle per depth in one haystack, asked in separate requests sharing the prefix."""
    values: list[Literal["number", "uuid"]] = ["number"]
    """Needle value kinds: 7-digit numbers and/or UUID4s."""
    smoke_context_lengths: list[Annotated[int, Field(ge=1, le=2**24)]] = Field([], max_length=64)
    """Lengths (from the grid) whose cells also run in smoke; empty: NIAH is not part of smoke."""

    @model_validator(mode="after")
    def _no_repeats(self) -> NiahSpec:
        if len(set(self.variants)) != len(self.variants) or len(set(self.values)) != len(self.values):
            raise ValueError("variants and values must not repeat")
        return self


NeedleKind = Literal["config", "signature", "error_code"]


class AgenticSpec(GridSpec):
    """The long-context agentic tool-call grid (context lengths × needle depths × needle kinds × modes).

    Each prompt is an agent transcript (system prompt, task, prior tool calls with their results: file
    listings, source files, configs, logs) built from `seed`; one tool result holds the needle (a config
    value, a function signature, an error code) and others hold near-miss distractors. The final user turn
    asks for one tool call whose argument must be that value, exactly. A cell is one request, streamed or not.
    """

    min_context_tokens: ClassVar[int] = 512
    min_context_reason: ClassVar[str] = " (an agent transcript needs room)"

    context_lengths: list[Annotated[int, Field(le=2**24)]] = Field([], max_length=64)
    """Prompt lengths in tokens (by the server's /tokenize, tools included); empty: a spread up to the served
    max_model_len. A length that leaves no room for `max_tokens` is filled to max_model_len - max_tokens - margin."""
    depths: list[float] = Field([0.1, 0.5, 0.9], max_length=101)
    """Where the tool result holding the needle sits among the prior steps (0 = first, 1 = last)."""
    needles: list[NeedleKind] = ["config", "signature", "error_code"]
    """config: a key's value in one config file (same key in another file, an older revision);
    signature: a function's `def` line (same function in a legacy module, an older revision);
    error_code: the code one worker logged for one job (another worker, a rotated older log)."""
    modes: list[Literal["nonstream", "stream"]] = ["nonstream", "stream"]
    tool_choice: Literal["auto", "required", "named"] = "auto"
    """How the final call is asked for: "auto" as agent clients do; "required" or "named" (the tool by name)
    constrain the call envelope, for models that do not choose tools on their own."""
    strict_tools: bool = False
    """Mark every tool `strict` (the engine constrains the arguments to the schema): for small models whose
    free arguments are not JSON objects; agent clients usually send non-strict tools."""
    request_timeout_s: float | None = Field(None, gt=0, le=86400)
    """Per-request timeout of the grid's chat requests (a long prompt's prefill can take minutes); default:
    the endpoint's request_timeout_s."""
    min_valid: float = Field(1.0, ge=0, le=1)
    """Minimum fraction of cells whose answer is one valid call to the asked tool (JSON, schema, not truncated,
    no markup leak), right value or not: what the parser and the transport owe whatever the model recalls."""
    all_pass_up_to: int | None = Field(None, ge=1, le=2**24)
    """Every cell at or below this context length must pass; misses above it only count in min_overall.
    A prompt the server rejects as longer than its context fails its cell whatever the length."""
    smoke_context_lengths: list[Annotated[int, Field(ge=1, le=2**24)]] = Field([], max_length=64)
    """Lengths (from the grid) whose cells also run in smoke; empty: the agentic grid is not part of smoke."""
    max_tokens: int = Field(256, ge=16, le=2**20)

    @model_validator(mode="after")
    def _no_repeats(self) -> AgenticSpec:
        if len(set(self.needles)) != len(self.needles) or len(set(self.modes)) != len(self.modes) or \
                not self.needles or not self.modes:
            raise ValueError("needles and modes must not be empty and must not repeat")
        return self
