"""Attach mode's `--wait-ready`: wait, bounded, until every host answers its transport and every endpoint is ready
(health 200 and `/v1/models` listing the declared model), before any check judges a half-started stack.

    targets = [host_target(spec, connection), endpoint_target(spec, client, watch=log_watch(spec, ...)), ...]
    outcome = wait_all_ready(targets, say=print)     # {name: TargetReadiness}
    outcome["local-vllm"].ready, outcome["local-vllm"].waited_s, outcome["local-vllm"].verdict()

Each target has its own deadline (the inventory's `wait_ready_s`, or the command line's). Every round probes the
targets still pending once (each probe bounded by the endpoint's `health_timeout_s` or the host's `timeout_s`),
then sleeps the poll interval; a progress line every `progress_every_s` says what is awaited, the elapsed time and
the engine log's last line where the inventory names the log (read with the launch code's watches, `_watch.py`).
Past its deadline a target is settled as not ready with the reason and its log tail; the others keep waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from ..core.contract import redact, visible
from ..core.errors import EndpointError, HostError
from ..engines.logs import PLACEMENT_WAIT, placement_group_stall
from ..io.answers import parse_json
from ..io.command import Rendered
from ..io.http import httpx_errors
from ..io.transport import Connection
from ._parse import error_line
from ._watch import DockerWatch, FileWatch, Observation, SystemdWatch, Watch, observe_safely

PROGRESS_EVERY_S = 5.0
INTERVAL_S = 1.0
TAIL_SHOWN = 12


@dataclass
class ReadyTarget:
    """One host or endpoint to wait for."""

    name: str
    kind: str
    """`host` or `endpoint`"""
    deadline_s: float
    probe: Callable[[], str | None]
    """None when ready, else what is still missing (one line)."""
    watch: Watch | None = None
    """The engine log, where the inventory names it: its last line is shown while waiting."""


@dataclass
class TargetReadiness:
    """How waiting for one target ended."""

    name: str
    kind: str
    ready: bool
    waited_s: float
    deadline_s: float
    last_reason: str = ""
    log_tail: str = ""
    log_source: str = ""
    probes: int = 0

    @property
    def log_readable(self) -> bool:
        return not self.log_tail.startswith(CANNOT_READ_LOG)

    def endpoint_hint(self) -> str:
        """What to do about an endpoint that did not come up: a refused connection is nothing listening (not a
        slow load); the log tail is pointed to only where one was read."""
        log = "read the engine log tail below" if self.log_readable and self.log_tail.strip() else \
            "read the engine's log (journalctl -u / docker logs / its log file)"
        if "Connection refused" in self.last_reason:
            return (f"nothing listens on the endpoint's port: the engine is not running or crashed at start; {log}, "
                    "then start it (its unit, container or command)")
        return (f"the engine is still loading, crash-looping or hung: {log}; raise wait_ready_s if a cold start "
                "legitimately takes longer")

    def verdict(self) -> str:
        """One paragraph: ready after N s, or not ready after N s with the reason, the engine's error and log tail."""
        if self.ready:
            return f"[{self.name}] ready after {self.waited_s:.1f} s ({self.probes} probe(s))"
        lines = [f"[{self.name}] not ready after {self.deadline_s:g} s ({self.probes} probe(s)): {self.last_reason}"]
        if not self.log_readable:  # the words of a failed read are not the engine's error
            lines.append(f"  log ({self.log_source}): {self.log_tail.strip()}")
        else:
            if stall := placement_group_stall(self.log_tail):  # vLLM under Ray: no error line, yet it never comes up
                lines.append(f"  {PLACEMENT_WAIT}: {stall}")
            if found := error_line(self.log_tail):
                lines.append(f"  engine error: {found}")
        if self.log_readable and self.log_tail.strip():
            lines.append(f"  last log lines ({self.log_source}):")
            lines += [f"    | {line}" for line in self.log_tail.strip().splitlines()[-TAIL_SHOWN:]]
        return visible(redact("\n".join(lines)))


@dataclass
class _Pending:
    target: ReadyTarget
    probes: int = 0
    reason: str = "not probed yet"
    last_line: str = ""
    observation: Observation | str | None = field(default=None)


def wait_all_ready(targets: list[ReadyTarget], *, say: Callable[[str], None] = print,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                   interval_s: float = INTERVAL_S, progress_every_s: float = PROGRESS_EVERY_S
                   ) -> dict[str, TargetReadiness]:
    """Probe until every target is ready or past its own deadline; {name: how it ended}. Never raises for a
    target (a host error is one more failed probe); returns at the latest deadline plus one probe round."""
    started = clock()
    pending = {t.name: _Pending(t) for t in targets}
    done: dict[str, TargetReadiness] = {}
    last_said = started
    while pending:
        for name, state in list(pending.items()):
            state.probes += 1
            reason = _safe_probe(state.target)
            elapsed = clock() - started
            if reason is None:
                done[name] = TargetReadiness(name, state.target.kind, True, round(elapsed, 1), state.target.deadline_s,
                                             probes=state.probes)
                if elapsed >= interval_s:  # say so only when it had to be awaited
                    say(f"[wait-ready] {name} ready after {elapsed:.1f} s")
                del pending[name]
                continue
            state.reason = reason
            if elapsed >= state.target.deadline_s:
                tail, source = _tail(state.target.watch)
                done[name] = TargetReadiness(name, state.target.kind, False, round(elapsed, 1),
                                             state.target.deadline_s, reason, tail, source, state.probes)
                say(f"[wait-ready] {name} NOT ready after {state.target.deadline_s:g} s: {visible(redact(reason))}")
                del pending[name]
        if not pending:
            break
        now = clock()
        if now - last_said >= progress_every_s:
            for state in pending.values():
                say(f"[wait-ready] {now - started:4.0f} s / {state.target.deadline_s:g} s: waiting for "
                    f"{state.target.kind} {state.target.name} ({visible(redact(state.reason))})"
                    + _last_line(state.target.watch))
            last_said = now
        sleep(interval_s)
    return {t.name: done[t.name] for t in targets}


CANNOT_READ_LOG = "(cannot read the log: "


def _safe_probe(target: ReadyTarget) -> str | None:
    try:
        return target.probe()
    except HostError as error:
        return str(error).splitlines()[0][:200]


def _tail(watch: Watch | None) -> tuple[str, str]:
    if watch is None:
        return "", ""
    seen = observe_safely(watch)
    if isinstance(seen, str):
        return f"{CANNOT_READ_LOG}{seen})", watch.source
    return seen.tail, watch.source


def _last_line(watch: Watch | None) -> str:
    """The log's last line for the progress line: redacted, then its escapes and bidi marks written out (an engine
    log's OSC/CSI sequences would retitle or clear the terminal, U+202E reverse what follows), as every other
    server text is shown."""
    tail, _ = _tail(watch)
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return f"; log: {visible(redact(lines[-1]))[-140:]}" if lines else ""


# ---- probes -----------------------------------------------------------------------------------------------------

def endpoint_probe(client: httpx.Client, model: str, *, timeout_s: float, plain_openai: bool = False
                   ) -> Callable[[], str | None]:
    """Ready = GET /health answers 200 (a plain OpenAI server may have none: 404 passes) and GET /v1/models lists
    `model`. Each request bounded by `timeout_s` (the endpoint's short health timeout)."""

    def probe() -> str | None:
        try:
            with httpx_errors():
                health = client.get("/health", timeout=timeout_s)
        except EndpointError as error:
            return f"GET /health: {error.kind}: {error.detail[:120]}"
        if health.status_code != 200 and not (plain_openai and health.status_code == 404):
            return f"GET /health: HTTP {health.status_code}"
        try:
            with httpx_errors():
                models = client.get("/v1/models", timeout=timeout_s)
        except EndpointError as error:
            return f"GET /v1/models: {error.kind}: {error.detail[:120]}"
        try:
            said = parse_json(models.text, "GET /v1/models") if models.status_code == 200 else None
        except EndpointError as error:  # not JSON, or over a bound: not ready (yet), in the reader's words
            return str(error)[:200]
        data = said.get("data") if isinstance(said, dict) else None
        if not isinstance(data, list):
            return f"GET /v1/models: HTTP {models.status_code}, no model list"
        served = sorted(str(card.get("id")) for card in data if isinstance(card, dict))
        return None if model in served else f"/v1/models lists {served}, not {model!r} (yet)"

    return probe


def host_probe(connection: Connection, command: Rendered) -> Callable[[], str | None]:
    """Ready = `command` (a declared read, e.g. `UNAME.render()`) exits 0 through the host's transport."""

    def probe() -> str | None:
        result = connection.run(command)
        return None if result.rc == 0 else f"`{command}` exited {result.rc}: {result.stderr.strip()[-160:]}"

    return probe


def log_watch(logs: str | None, connection: Connection | None, *, launch_path: str | None = None) -> Watch | None:
    """The launch code's watch for an endpoint's `logs` source (to show its last lines); None when not declared."""
    if not logs or connection is None:
        return None
    kind, _, where = logs.partition(":")
    if kind == "launch":
        return FileWatch(f"file:{launch_path}", connection, launch_path) if launch_path else None
    watch_type = {"file": FileWatch, "journal": SystemdWatch, "docker": DockerWatch}.get(kind)
    return watch_type(logs, connection, where) if watch_type and where else None
