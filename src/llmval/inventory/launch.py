"""Launch and teardown of a stack (used only with --launch)."""

from __future__ import annotations

from pydantic import Field

from ._base import Spec


class StepSpec(Spec):
    """One command of a launch or teardown sequence."""

    host: str
    """Inventory host the command runs on."""
    run: str
    background: bool = False
    """Local hosts only: start it as a long-running process owned by the suite (its log kept)."""
    name: str = ""
    timeout_s: float = Field(120, gt=0)
    ok_rc: list[int] = [0]
    destructive: bool = False
    """Kills or restarts something beyond our own stack; needs --allow-destructive."""
    env: dict[str, str] = {}


class ReadinessSpec(Spec):
    """When a launched stack counts as ready, and when to give up."""

    endpoint: str
    timeout_s: float = Field(600, gt=0)
    no_progress_s: float = Field(120, gt=0)
    """A log that says nothing new for this long is a hang."""
    interval_s: float = Field(2, gt=0)
    crash_loop_restarts: int = Field(2, ge=1)
    """A systemd unit or container restarting this many times while waiting is a crash loop."""
    watch: str | None = None
    """Where to read progress and restarts: `process` (our background step), `systemd:<unit>@<host>`,
    `docker:<container>@<host>`."""


class LaunchSpec(Spec):
    """How to bring the stack up and down (used only with --launch)."""

    start: list[StepSpec]
    stop: list[StepSpec]
    ready: ReadinessSpec
