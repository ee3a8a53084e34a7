"""The NIAH grid: which cells an inventory asks for, how each trial's prompt is built, and the gates.

A cell is (variant, value kind, context length, depth). Its trials are seeded from the inventory's
seed and the cell's coordinates only, so a cell asks the same questions every night; the prompt's
SHA-256 is kept with its result to prove it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

from ..inventory.accuracy import AgenticSpec, NiahSpec
from .builder import (
    Case,
    TokenCounter,
    ValueKind,
    derive_seed,
    fit_units,
    hard_case,
    plain_case,
    prefix_case,
    prompt_sha256,
)

VARIANT_SUFFIX = {"plain": "", "hard": "-hard", "prefix_cache": "-prefix"}
DEFAULT_MIN_LENGTH = 1024
DEFAULT_MAX_CELLS_LENGTHS = 7


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


def grid_name(spec: NiahSpec) -> str:
    """The grid's id prefix: the endpoint name, plus the spec's name if it has one."""
    return f"{spec.endpoint}-{spec.name}" if spec.name else spec.endpoint


def default_context_lengths(max_model_len: int) -> list[int]:
    """Powers of two from 1k below max_model_len, then max_model_len itself; at most 7, longest kept."""
    lengths = [2**k for k in range(10, 40) if DEFAULT_MIN_LENGTH <= 2**k < max_model_len]
    return [*lengths, max_model_len][-DEFAULT_MAX_CELLS_LENGTHS:]


def target_tokens(spec: NiahSpec | AgenticSpec, length: int, max_model_len: int | None) -> int:
    """The prompt budget of a cell: its length, capped so that the answer still fits max_model_len."""
    if max_model_len is None:
        return length
    return min(length, max_model_len - spec.max_tokens - spec.margin_tokens)


def plan_cells(spec: NiahSpec, max_model_len: int | None) -> list[Cell]:
    """Every cell of the grid, in run order (variant, value kind, length, depth)."""
    if spec.context_lengths:
        lengths = sorted(spec.context_lengths)
    elif max_model_len is not None:
        lengths = default_context_lengths(max_model_len)
    else:
        raise ValueError(f"niah grid '{grid_name(spec)}': no context_lengths and the endpoint declares no "
                         "max_model_len; declare one of them in the inventory")
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


@dataclasses.dataclass(frozen=True)
class GateVerdict:
    """One gate's verdict over a measured grid."""

    check: str
    expected: str
    observed: str
    ok: bool
    offenders: tuple[str, ...] = ()


def prompt_token_offenders(spec: NiahSpec, results: Sequence[CellResult]) -> list[str]:
    """Trials whose usage.prompt_tokens is off the calibrated count by more than the tolerance."""
    out = []
    for result in results:
        for t in result.trials:
            if t.prompt_tokens is None or abs(t.prompt_tokens - t.calibrated_tokens) > \
                    spec.prompt_tokens_tolerance * t.calibrated_tokens:
                out.append(f"{result.cell.id}#{t.trial}: /tokenize {t.calibrated_tokens}, usage {t.prompt_tokens}")
    return out


def evaluate_gates(spec: NiahSpec | AgenticSpec, results: Sequence[CellResult], check_prefix: str = "accuracy.niah"
                   ) -> list[GateVerdict]:
    """The inventory's gates over a fully measured grid: all cells up to N pass; overall pass rate.

    Any grid whose spec has `all_pass_up_to`/`min_overall` and whose results have `cell.length`,
    `cell.id` and `is_pass` is judged the same way (the agentic grid uses `accuracy.agentic`)."""
    verdicts = []
    if spec.all_pass_up_to is not None:
        scope = [r for r in results if r.cell.length <= spec.all_pass_up_to]
        missed = tuple(r.cell.id for r in scope if not r.is_pass)
        verdicts.append(GateVerdict(f"{check_prefix}.all_pass_up_to",
                                    f"every cell up to {spec.all_pass_up_to} tokens passes ({len(scope)} cells)",
                                    f"{len(scope) - len(missed)}/{len(scope)} pass", not missed, missed))
    passed = sum(r.is_pass for r in results)
    rate = passed / len(results) if results else 0.0
    verdicts.append(GateVerdict(f"{check_prefix}.min_overall", f">= {spec.min_overall:.0%} of cells pass",
                                f"{rate:.1%} ({passed}/{len(results)})", bool(results) and rate >= spec.min_overall,
                                tuple(r.cell.id for r in results if not r.is_pass)))
    return verdicts


def prompts_fingerprint(results: Sequence[CellResult]) -> str:
    """One SHA-256 over every prompt hash of the grid, in cell order: equal fingerprints, equal prompts."""
    digest = hashlib.sha256()
    for result in results:
        for t in result.trials:
            digest.update(t.prompt_sha256.encode("ascii"))
    return digest.hexdigest()
