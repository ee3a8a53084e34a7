"""Named hypothesis strategies for the NIAH self-tests."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from llmval.needle.builder import random_value

value_kinds = st.sampled_from(["number", "uuid"])
variants = st.sampled_from(["plain", "hard", "prefix_cache"])
depths = st.floats(min_value=0, max_value=1, allow_nan=False)
seeds = st.integers(min_value=0, max_value=2**63)
# Text that can never form or extend a value: no digits, no hex letters, no hyphens.
NEUTRAL_ALPHABET = "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ .,:;!?()'\n\t"
neutral_texts = st.text(alphabet=NEUTRAL_ALPHABET, max_size=40)


@st.composite
def values(draw, kind: str) -> str:
    """A value of `kind`, drawn as the builder draws them."""
    return random_value(random.Random(draw(seeds)), kind)


@st.composite
def distinct_value_pairs(draw) -> tuple[str, str, str]:
    """(kind, expected, other): two different values of one kind."""
    kind = draw(value_kinds)
    expected = draw(values(kind))
    other = draw(values(kind).filter(lambda v: v.lower() != expected.lower()))
    return kind, expected, other


@st.composite
def answers_around(draw, parts: list[str]) -> str:
    """The parts in a drawn order, joined by neutral text."""
    ordered = draw(st.permutations(parts))
    glue = [draw(neutral_texts.map(lambda t: f" {t} ")) for _ in range(len(ordered) + 1)]
    return glue[0] + "".join(p + g for p, g in zip(ordered, glue[1:], strict=True))
