"""Seeded, synthetic needle-in-a-haystack prompts, sized to a token budget.

Everything is derived from a seed through `random.Random` (never `hash()`, the clock or file order),
so the same seed gives byte-identical prompts on every machine, every night. The haystack is a
stream of units (words of generated sentences, or needle-shaped distractor sentences); a prompt uses
the first `n` units, and `llmval.grid.fit_units` finds the largest `n` whose prompt fits the budget under a
given token counter (the server's `/tokenize`, or an offline stand-in in self-tests).

>>> case = plain_case(llmval.grid.derive_seed(0, "plain", "number", 4096, 0.5, 0), "number", depth=0.5)
>>> messages = case.messages(200, case.needles[0])
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Sequence
from typing import Literal

from ..grid.fit import BudgetError
from ._words import (
    FILLER_CONNECTIVES,
    FILLER_OBJECTS,
    FILLER_PLACES,
    FILLER_SUBJECTS,
    FILLER_VERBS,
    KEY_ADJECTIVES,
    KEY_NOUNS,
)

ValueKind = Literal["number", "uuid"]
VALUE_KINDS: tuple[ValueKind, ...] = ("number", "uuid")
NEEDLE_TEMPLATE = "One of the special magic {plural} for {key} is: {value}."
PROMPT_HEAD = ("Some special magic {plural} are hidden within the following text. Make sure to memorize it. "
               "I will quiz you about the {plural} afterwards.\n")
PROMPT_QUESTION = ("\nWhat is the special magic {singular} for {key} mentioned in the provided text? "
                   "Answer with the {singular} only.")
_NAMES = {"number": ("number", "numbers"), "uuid": ("uuid", "uuids")}


def random_value(rng: random.Random, kind: ValueKind) -> str:
    """A 7-digit number, or a version-4 UUID, drawn from `rng` (RULER's value shapes)."""
    if kind == "number":
        return str(rng.randint(1_000_000, 9_999_999))
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def random_key(rng: random.Random) -> str:
    """An adjective-noun key such as `silent-heron`."""
    return f"{rng.choice(KEY_ADJECTIVES)}-{rng.choice(KEY_NOUNS)}"


@dataclasses.dataclass(frozen=True)
class Needle:
    """One fact hidden in the haystack: the special magic value for a key."""

    key: str
    value: str
    kind: ValueKind

    def sentence(self) -> str:
        return NEEDLE_TEMPLATE.format(plural=_NAMES[self.kind][1], key=self.key, value=self.value)

    def question(self) -> str:
        return PROMPT_QUESTION.format(singular=_NAMES[self.kind][0], key=self.key)


def filler_units(rng: random.Random, count: int) -> list[str]:
    """`count` words of varied generated sentences; each sentence's last word ends with a full stop."""
    units: list[str] = []
    while len(units) < count:
        parts = [rng.choice(FILLER_SUBJECTS), rng.choice(FILLER_VERBS), rng.choice(FILLER_OBJECTS)]
        if rng.random() < 0.6:
            parts.append(rng.choice(FILLER_PLACES))
        sentence = " ".join(parts)
        if rng.random() < 0.3:
            connective = rng.choice(FILLER_CONNECTIVES)
            sentence = f"{connective} {sentence}"
        sentence = sentence[0].upper() + sentence[1:] + "."
        units.extend(sentence.split(" "))
    return units[:count]


def distractor_units(rng: random.Random, count: int, kind: ValueKind, avoid: set[str]) -> list[Needle]:
    """`count` needle-shaped distractors with keys and values distinct from each other and from `avoid`."""
    seen = set(avoid)
    out: list[Needle] = []
    attempts = 0
    while len(out) < count:
        attempts += 1
        if attempts > 50 * count + 1000:
            raise BudgetError(f"cannot draw {count} distinct distractor keys; the key space is too small")
        key = random_key(rng) if len(seen) < len(KEY_ADJECTIVES) * len(KEY_NOUNS) // 2 else \
            f"{random_key(rng)}-{random_key(rng)}"
        value = random_value(rng, kind)
        if key in seen or value in seen:
            continue
        seen.update((key, value))
        out.append(Needle(key, value, kind))
    return out


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a needle went: its requested depth, the unit index it precedes, the depth realised."""

    needle: Needle
    depth: float
    unit_index: int
    actual_depth: float


@dataclasses.dataclass(frozen=True)
class Case:
    """A haystack stream and the needles to hide in it, at their depths (0 = first, 1 = last).

    `units` is the whole stream; a prompt of size `n` uses `units[:n]`. `planted` is every value in the
    stream besides the needles' (the distractors of the hard variant), for the scorer.
    """

    units: tuple[str, ...]
    needles: tuple[Needle, ...]
    depths: tuple[float, ...]
    planted: tuple[str, ...] = ()

    def boundaries(self, n: int) -> list[int]:
        """Unit indices where a sentence starts (0 and n included): where a needle may go."""
        return [0, *(i for i in range(1, n) if self.units[i - 1].endswith(".")), n] if n else [0]

    def placements(self, n: int) -> list[Placement]:
        """Each needle at the sentence boundary nearest its depth; ties go to the earlier boundary."""
        bounds = self.boundaries(n)
        out = []
        for needle, depth in zip(self.needles, self.depths, strict=True):
            index = min(bounds, key=lambda b: (abs(b - depth * n), b))
            out.append(Placement(needle, depth, index, index / n if n else depth))
        return out

    def context(self, n: int) -> str:
        """The haystack text of the first `n` units with every needle inserted."""
        if n > len(self.units):
            raise BudgetError(f"the haystack stream has {len(self.units)} units; {n} were asked for")
        by_index: dict[int, list[str]] = {}
        for placement in self.placements(n):
            by_index.setdefault(placement.unit_index, []).append(placement.needle.sentence())
        words: list[str] = []
        for i in range(n + 1):
            words.extend(by_index.get(i, ()))
            if i < n:
                words.append(self.units[i])
        return " ".join(words)

    def messages(self, n: int, asked: Needle) -> list[dict]:
        """The chat request's messages: one user turn, RULER's layout (instruction, context, question)."""
        plural = _NAMES[asked.kind][1]
        content = PROMPT_HEAD.format(plural=plural) + self.context(n) + asked.question()
        return [{"role": "user", "content": content}]


def plain_case(seed: int, kind: ValueKind, depth: float, stream_units: int = 0) -> Case:
    """One needle in varied generated prose (RULER niah_single with synthetic text)."""
    rng = random.Random(seed)
    needle = Needle(random_key(rng), random_value(rng, kind), kind)
    return Case(tuple(filler_units(rng, stream_units)), (needle,), (depth,))


def hard_case(seed: int, kind: ValueKind, depth: float, stream_units: int = 0) -> Case:
    """One needle among needle-shaped distractors only (RULER niah_multikey_2/3)."""
    rng = random.Random(seed)
    needle = Needle(random_key(rng), random_value(rng, kind), kind)
    distractors = distractor_units(rng, stream_units, kind, {needle.key, needle.value})
    return Case(tuple(d.sentence() for d in distractors), (needle,), (depth,),
                planted=tuple(d.value for d in distractors))


def prefix_case(seed: int, kind: ValueKind, depths: Sequence[float], stream_units: int = 0) -> Case:
    """One needle per depth in one haystack: the questions share the whole context as a prefix."""
    rng = random.Random(seed)
    needles: list[Needle] = []
    seen: set[str] = set()
    while len(needles) < len(depths):
        needle = Needle(random_key(rng), random_value(rng, kind), kind)
        if needle.key not in seen and needle.value not in seen:
            seen.update((needle.key, needle.value))
            needles.append(needle)
    return Case(tuple(filler_units(rng, stream_units)), tuple(needles), tuple(depths))


def whitespace_token_count(messages: list[dict]) -> int:
    """OFFLINE STAND-IN for a tokenizer, for self-tests only: whitespace pieces plus 4 per message.

    It is not any model's tokenizer; it only has to be deterministic and monotone in the text.
    """
    return sum(len(str(m["content"]).split()) + 4 for m in messages)
