"""The deployment itself: its goal and rules, key decisions, and known blockers."""

from __future__ import annotations

from typing import Literal

from ._base import Spec


class DecisionSpec(Spec):
    """A key decision, its rationale, and the checks that guard it."""

    id: str
    decision: str
    rationale: str
    guarded_by: list[str] = []
    """Check names (e.g. serving.speculative.num_steps) that fail if the decision is undone."""


class BlockerSpec(Spec):
    """A known blocker: the named check is expected to fail; if it passes, the run says so."""

    id: str
    reason: str
    check: str
    """The check name that shows the blocker (its test runs as strict xfail)."""
    revisit: str = ""
    """The decision to revisit when the blocker lifts."""


class DeploymentSpec(Spec):
    """The deployment as a whole: what it is for and the rules it lives under."""

    name: str
    goal: str = ""
    constraints: list[str] = []
    kind: Literal["production", "lab", "replay"] = "production"
