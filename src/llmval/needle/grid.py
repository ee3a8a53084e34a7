"""The NIAH grid: which cells an inventory asks for, how each trial's prompt is built, and its results.

A cell is (variant, value kind, context length, depth). Its trials are seeded from the inventory's
seed and the cell's coordinates only, so a cell asks the same questions every night; the prompt's
SHA-256 is kept with its result to prove it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

from ..grid import TokenCounter, context_lengths, derive_seed, fit_units, grid_name, prompt_sha256, target_tokens
from ..inventory.accuracy import NiahSpec
from .builder import Case, ValueKind, hard_case, plain_case, prefix_case

VARIANT_SUFFIX = {"plain": "", "hard": "-hard", "prefix_cache": "-prefix"}


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell of a grid; `id` is the pytest id (`local-vllm-4096-d50`, `...-d50-hard-uuid`)."""

    grid: str
    variant: str
    kind: ValueKind
    length: int
    depth: float
    target_tokens: int
    """The prompt-token budget the haystack is fitted to (the length, less room to answer at the max)."""

    @property
    def id(self) -> str:
        kind = "" if self.kind == "number" else f"-{self.kind}"
        return f"{self.grid}-{self.length}-d{round(self.depth * 100)}{VARIANT_SUFFIX[self.variant]}{kind}"


def plan_cells(spec: NiahSpec, max_model_len: int | None) -> list[Cell]:
    """Every cell of the grid, in run order (variant, value kind, length, depth)."""
    lengths = context_lengths("niah", spec, max_model_len)
    return [Cell(grid_name(spec), variant, kind, length, depth, target_tokens(spec, length, max_model_len))
            for variant in spec.variants for kind in spec.values for length in lengths
            for depth in sorted(spec.depths)]


@dataclasses.dataclass(frozen=True)
class TrialPrompt:
    """A built prompt and what a correct answer is."""

    seed: int
    messages: list[dict]
    sha256: str
    expected: str
    kind: ValueKind
    planted: tuple[str, ...]
    n_units: int
    calibrated_tokens: int
    actual_depth: float


def trial_seed(spec: NiahSpec, cell: Cell, trial: int) -> int:
    """The seed of a trial; prefix_cache trials of one length share it (one haystack, many questions)."""
    depth = "shared" if cell.variant == "prefix_cache" else cell.depth
    return derive_seed(spec.seed, cell.variant, cell.kind, cell.length, depth, trial)


def make_case(spec: NiahSpec, cell: Cell, trial: int) -> tuple[Case, int]:
    """The haystack case of a trial and the index of the needle it asks about."""
    seed = trial_seed(spec, cell, trial)
    if cell.variant == "plain":
        return plain_case(seed, cell.kind, cell.depth, stream_units=cell.target_tokens), 0
    if cell.variant == "hard":
        return hard_case(seed, cell.kind, cell.depth, stream_units=max(1, cell.target_tokens // 4)), 0
    depths = tuple(sorted(spec.depths))
    return prefix_case(seed, cell.kind, depths, stream_units=cell.target_tokens), depths.index(cell.depth)


def build_trial(spec: NiahSpec, cell: Cell, trial: int, count: TokenCounter,
                n_units: int | None = None) -> TrialPrompt:
    """Build a trial's prompt, fitting the haystack to the cell's budget under `count` (or using `n_units`)."""
    case, asked_index = make_case(spec, cell, trial)
    asked = case.needles[asked_index]
    if n_units is None:
        n_units, tokens = fit_units(lambda n: count(case.messages(n, asked)), cell.target_tokens, len(case.units))
    else:
        tokens = count(case.messages(n_units, asked))
    messages = case.messages(n_units, asked)
    planted = tuple(n.value for n in case.needles if n is not asked) + case.planted
    return TrialPrompt(seed=trial_seed(spec, cell, trial), messages=messages, sha256=prompt_sha256(messages),
                       expected=asked.value, kind=cell.kind, planted=planted, n_units=n_units,
                       calibrated_tokens=tokens, actual_depth=round(case.placements(n_units)[asked_index]
                                                                    .actual_depth, 4))


@dataclasses.dataclass
class TrialResult:
    """One question asked and how it was answered and scored."""

    trial: int
    seed: int
    prompt_sha256: str
    expected: str
    calibrated_tokens: int
    prompt_tokens: int | None
    """usage.prompt_tokens as the server reported it."""
    n_units: int
    actual_depth: float
    answer: str
    finish_reason: str | None
    is_pass: bool
    others: list[str]
    ruler_score: float
    elapsed_s: float
    completion_tokens: int | None = None
    """usage.completion_tokens as the server claimed it."""
    not_retrieval: str = ""
    """Why the answer was not a retrieval at all (`llmval.grid.not_a_retrieval`); "" when it may be one."""


@dataclasses.dataclass
class CellResult:
    """The trials of one cell; the cell passes when every trial passes."""

    cell: Cell
    trials: list[TrialResult] = dataclasses.field(default_factory=list)
    error: str | None = None
    """Why the cell could not be measured, if it could not."""

    @property
    def is_pass(self) -> bool:
        return self.error is None and bool(self.trials) and all(t.is_pass for t in self.trials)

    @property
    def pass_rate(self) -> float | None:
        return sum(t.is_pass for t in self.trials) / len(self.trials) if self.trials else None

    @property
    def not_retrieval(self) -> str:
        """Why a trial's answer was not a retrieval (the first such trial); "" when none was."""
        return next((f"trial {t.trial}: {t.not_retrieval}" for t in self.trials if t.not_retrieval), "")


def prompt_token_offenders(spec: NiahSpec, results: Sequence[CellResult]) -> list[str]:
    """Trials whose usage.prompt_tokens is off the calibrated count by more than the tolerance."""
    out = []
    for result in results:
        for t in result.trials:
            if t.prompt_tokens is None or abs(t.prompt_tokens - t.calibrated_tokens) > \
                    spec.prompt_tokens_tolerance * t.calibrated_tokens:
                out.append(f"{result.cell.id}#{t.trial}: /tokenize {t.calibrated_tokens}, usage {t.prompt_tokens}")
    return out


def prompts_fingerprint(results: Sequence[CellResult]) -> str:
    """One SHA-256 over every prompt hash of the grid, in cell order: equal fingerprints, equal prompts."""
    digest = hashlib.sha256()
    for result in results:
        for t in result.trials:
            digest.update(t.prompt_sha256.encode("ascii"))
    return digest.hexdigest()


def observed(result: CellResult) -> str:
    """What a cell's trials answered, for messages: `'...1234567.' (2047 prompt tokens, depth 0.5)`."""
    return "; ".join((f"not a retrieval: {t.not_retrieval}; answered " if t.not_retrieval else "")
                     + f"{t.answer.strip()[:80]!r} ({t.prompt_tokens} prompt tokens, depth {t.actual_depth})"
                     for t in result.trials)
