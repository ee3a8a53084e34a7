"""The deployment itself: its goal and rules, key decisions, and known blockers.

These sections feed the status document (`reports/status.md`) that every contract run writes, and the
blockers plugin that runs known blockers as strict xfail.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Literal

from pydantic import Field

from ._base import Spec
from .values import Label, Name, Text

CHECK_PATTERN = r"^[a-z0-9_*?\[\]-]+(\.[a-z0-9_*?\[\]-]+)+$"


class DecisionSpec(Spec):
    """A key decision, its rationale, and the checks that guard it.

    Usage: `DecisionSpec(id="spec-steps-4", decision="speculative steps = 4", rationale="best C=1 tok/s",
    guarded_by=["serving.speculative.num_steps", "perf.decode.tok_s_c1"])`
    """

    id: Name
    decision: Text
    rationale: Text
    platform: Text = ""
    """The platform the decision applies to; empty: the whole deployment."""
    guarded_by: list[Label] = Field([], max_length=1024)
    """Check names (e.g. serving.speculative.num_steps) that fail if the decision is undone; `*` globs allowed."""
    revisit_when: Text = ""
    """What would make the decision worth revisiting (e.g. "SGLang multi-node fixed")."""


class BlockerSpec(Spec):
    """A known blocker: the named check is expected to fail; if it passes, the run says so.

    A test whose `expect` records a failing verdict for `check` (on `subject`, when given) is reported as
    xfail with `reason`; a test that records a passing verdict for it fails the run with "blocker lifted:
    revisit <revisit>".
    """

    id: Name
    reason: Text
    check: str = Field(pattern=CHECK_PATTERN, max_length=256)
    """The check name that shows the blocker, e.g. hosts.nccl.p2p (`*` globs allowed)."""
    subject: Text = ""
    """Only verdicts on this host or endpoint (glob); empty: any subject."""
    test: Text = ""
    """Only tests whose node id matches this glob (e.g. `*test_nccl*`); empty: any test stating the check."""
    platform: Text = ""
    revisit: Text = ""
    """The id of the decision to revisit when the blocker lifts."""
    workaround: Text = ""
    """What the deployment does instead, for the status document."""


class HintSpec(Spec):
    """The owners' own hint for a check on their deployment (what happened here before, what this deployment does
    about it), quoted after the suite's hint, which says only what is true of any deployment.

    Usage: `[[hints]]` `check = "serving.model.id"`, `subject = "spark-vllm"`, `text = "after a reboot the old
    GLM container came back: docker rm -f it"`.
    """

    check: str = Field(pattern=CHECK_PATTERN, max_length=256)
    """The check it is about, e.g. serving.model.id (`*` globs allowed)."""
    subject: Text = ""
    """Only verdicts on this host or endpoint (glob); empty: any subject."""
    text: Text

    def applies_to(self, subject: str, check: str) -> bool:
        return fnmatchcase(check, self.check) and (not self.subject or fnmatchcase(subject, self.subject))


OWNER_HINT_PREFIX = "on this deployment: "


def with_owner_hints(hint: str, hints: Sequence[HintSpec], subject: str, check: str) -> str:
    """`hint` (the suite's), then the inventory's hints for this check and subject.

    >>> with_owner_hints("`docker ps`", [HintSpec(check="serving.*", text="the old container came back")],
    ...                  "spark-vllm", "serving.model.id")
    '`docker ps`; on this deployment: the old container came back'
    """
    owned = [h.text for h in hints if h.applies_to(subject, check)]
    if not owned:
        return hint
    return "; ".join([*([hint] if hint else []), OWNER_HINT_PREFIX + "; ".join(owned)])


class DeploymentSpec(Spec):
    """The deployment as a whole: what it is for and the rules it lives under."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
    """Used in file names (history, junit suite): letters, digits, `_` and `-`, at most 64."""
    goal: Text = ""
    constraints: list[Text] = Field([], max_length=1024)
    kind: Literal["production", "lab", "replay"] = "production"
    next_steps: list[Text] = Field([], max_length=1024)
    """Declared next steps; the status document adds the ones the run implies (failures, lifted blockers)."""
    critical_context: list[Text] = Field([], max_length=1024)
    """Declared facts that are not measured by any check (model architecture, topology notes)."""
    relevant_files: dict[Name, list[Text]] = {}
    """Host name → paths that matter on it (unit files, launch scripts, logs); shown beside the paths the
    run itself checked."""
