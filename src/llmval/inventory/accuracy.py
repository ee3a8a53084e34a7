"""Accuracy gates of an endpoint: the needle-in-a-haystack grid."""

from __future__ import annotations

from pydantic import Field

from ._base import Spec


class NiahSpec(Spec):
    """The needle-in-a-haystack grid."""

    endpoint: str
    context_lengths: list[int] = []
    """Prompt lengths in tokens; empty: a spread up to the served max_model_len."""
    depths: list[float] = [0.0, 0.25, 0.5, 0.75, 1.0]
    trials: int = Field(1, ge=1)
    seed: int = 0
    variants: list[str] = ["plain"]
    """plain, hard (needle-shaped distractors), prefix_cache (several questions over one haystack)."""
    min_overall: float = Field(0.95, ge=0, le=1)
    all_pass_up_to: int | None = None
    """Every cell at or below this context length must pass."""
    smoke_context_lengths: list[int] = []
    """A small grid for smoke runs; empty: NIAH is not part of smoke."""
