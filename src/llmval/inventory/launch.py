"""Launch and teardown of a stack (used only with --launch).

The inventory declares the commands; the suite only runs them, in order, with a timeout each, and
judges readiness. Nothing here is hard-coded for one platform, so another deployment plugs in by
writing its own `[launch]` section.

    [[launch.start]]                       # a command on an inventory host
    host = "kpro6"
    run = "pct exec 129 -- systemctl start sglang.service"

    [[launch.start]]                       # repeated until its output shows the condition
    host = "spark1"
    run = "docker exec vllm-node ray status"
    wait = { ray_alive_nodes = 2 }

    [launch.ready]
    endpoint = "kpro6-sglang"
    watch = ["systemd:sglang.service@kpro6-ct129"]   # crash loop = NRestarts climbing
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator

from ._base import Spec
from .values import EnvKey, Name, Seconds, Text, check_source

WATCH_RE = re.compile(
    r"^(?:process|(?P<kind>systemd|docker|file):(?P<target>[^@\s]+)@(?P<host>[A-Za-z0-9][A-Za-z0-9_.-]*))$"
)
"""`process` | `systemd:<unit>@<host>` | `docker:<container>@<host>` | `file:<path>@<host>`."""


class WaitSpec(Spec):
    """Repeat a step's command until its output shows a condition, within the step's timeout_s.

    With no condition set, the step is repeated until it exits with a code in `ok_rc`.
    """

    interval_s: Seconds = 2
    ray_alive_nodes: int | None = Field(None, ge=1, le=100_000)
    """The command prints `ray status`; at least this many nodes must be listed as active/healthy."""
    gpu_memory_used_mib_max: int | None = Field(None, ge=0, le=2**31)
    """The command prints `nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits`;
    every GPU must use at most this much (the idle level: nothing of ours holds GPU memory)."""


class StepSpec(Spec):
    """One command of a launch or teardown sequence."""

    host: Name
    """Inventory host the command runs on (through that host's transport)."""
    run: Annotated[Text, Field(min_length=1)]
    """The shell command, sent exactly as written (plus `env` as a `K=V` prefix)."""
    background: bool = False
    """Local hosts only: start it as a long-running process owned by the suite (its log kept)."""
    name: Annotated[Text, Field(max_length=200)] = ""
    timeout_s: Seconds = 120
    """Limit for one run of the command; for a `wait` step, for the whole wait."""
    ok_rc: list[Annotated[int, Field(ge=0, le=255)]] = Field([0], min_length=1, max_length=256)
    """Exit codes that count as success (e.g. [0, 1] for `pkill`, which exits 1 when nothing matched)."""
    destructive: bool = False
    """Kills or restarts something beyond our own stack; skipped (and said so) without --allow-destructive."""
    env: dict[EnvKey, Text] = Field({}, max_length=1024)
    """Environment variables of the command (names are identifiers: they are pasted into a shell line)."""
    wait: WaitSpec | None = None
    """Repeat the command until the condition holds (bounded polling, never a sleep)."""

    @property
    def label(self) -> str:
        """The step's name, or the start of its command."""
        return self.name or self.run[:60]


class ReadinessSpec(Spec):
    """When a launched stack counts as ready, and when to give up."""

    endpoint: Name
    """The endpoint whose `path` must answer 200."""
    path: str = Field("/health", pattern=r"^/[!-~]{0,2047}$")
    timeout_s: Seconds = 600
    no_progress_s: Seconds = 120
    """A watched log that says nothing new for this long is a hang (e.g. stuck after NCCL channel setup)."""
    interval_s: Seconds = 2
    crash_loop_restarts: int = Field(2, ge=1, le=1000)
    """A systemd unit or container restarting this many times while waiting is a crash loop."""
    watch: list[str] = []
    """Where to read progress, crashes and restarts while waiting. Our own background steps are always
    watched; add `systemd:<unit>@<host>` (NRestarts, ActiveState, journal), `docker:<container>@<host>`
    (RestartCount, State, docker logs) or `file:<path>@<host>` (a log file's size and tail)."""
    port_must_be_free: bool = True
    """Before launch nothing may accept connections on the endpoint's port: never attach silently to a
    server the suite did not start (a stale container still serving an old model)."""

    @field_validator("watch")
    @classmethod
    def _watch_sources_parse(cls, value: list[str]) -> list[str]:
        bad = [w for w in value if not WATCH_RE.match(w)]
        if bad:
            raise ValueError(f"unknown watch source(s) {bad}; valid: 'process', 'systemd:<unit>@<host>', "
                             "'docker:<container>@<host>', 'file:<path>@<host>'")
        for source in value:
            if source != "process":
                check_source(source.rpartition("@")[0], ("systemd", "docker", "file"))
        return value


class LaunchSpec(Spec):
    """How to bring the stack up and down (used only with --launch).

    Teardown (`stop`) always runs, also after a failed start or an interrupted run, so its commands
    must succeed when there is nothing to stop (list the "nothing to do" exit codes in `ok_rc`).
    """

    preflight: list[StepSpec] = Field([], max_length=256)
    """Checks that must pass before anything starts (a unit already active, a container name taken, GPUs
    not idle). A failing check starts nothing, so teardown has nothing of ours to stop and touches nothing."""
    start: list[StepSpec] = Field(max_length=256)
    stop: list[StepSpec] = Field(max_length=256)
    ready: ReadinessSpec
    term_grace_s: Seconds = 15
    """Teardown: how long our background processes get after SIGTERM before their group is SIGKILLed."""

    def watch_hosts(self) -> list[str]:
        """Hosts named by the readiness watch sources."""
        return [m["host"] for w in self.ready.watch if (m := WATCH_RE.match(w)) and m["host"]]
