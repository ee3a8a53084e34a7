"""What the engine says about itself: its identity (the baseline key) and its counters around a run.

Everything engine-specific comes from the engine's adapter class (`llmval.engines`): which `/metrics`
names count generated tokens and queued requests, how speculative acceptance is computed, and which
engine endpoints describe the deployment. `/metrics` is parsed by the one Prometheus parser
(`llmval.engines.metrics.parse_metrics`).

`server_identity` collects what makes two deployments comparable (engine and version, model and
its path, context length, KV-cache dtype/block size/prefix caching, speculative config) and hashes it
into `server_key`; a baseline is only ever compared with a run of the same key.

`EngineCounters` are `/metrics` scrapes taken before and after a run. Their deltas give the
speculative acceptance over exactly that window (the adapter's `acceptance`; for vLLM its
`fetch_spec_decode_metrics`: length = 1 + Δaccepted/Δdrafts, rate = Δaccepted/Δdraft_tokens) and reveal
*other* traffic: generated tokens the engine counted beyond this run's own say someone else was loading
the server.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

import httpx

from ..core.errors import EndpointError
from ..engines import EngineAdapter
from ..engines.logs import lines_since
from ..engines.metrics import Metrics, parse_metrics
from ..engines.ranges import outside_ranges
from ..io.answers import ModelList, checked, parse_json
from ..io.http import httpx_errors


async def _get(client: httpx.AsyncClient, path: str, endpoint: str) -> httpx.Response | None:
    with httpx_errors(f"[{endpoint}] GET {path}"):
        response = await client.get(path)
    return response if response.status_code == 200 else None


@dataclass(frozen=True)
class EngineCounters:
    """One `/metrics` scrape read through the engine's adapter (None where it has no such counter)."""

    engine: type[EngineAdapter]
    metrics: Metrics

    def _total(self, name: str | None) -> float | None:
        return None if name is None else self.metrics.total(name)

    @property
    def generation_tokens(self) -> float | None:
        return self._total(self.engine.load_counters.generation_tokens)

    @property
    def finished_requests(self) -> float | None:
        return self._total(self.engine.load_counters.finished_requests)

    @property
    def running(self) -> float | None:
        return self._total(self.engine.load_counters.running)

    @property
    def waiting(self) -> float | None:
        return self._total(self.engine.load_counters.waiting)

    @classmethod
    def from_text(cls, text: str, engine: type[EngineAdapter]) -> EngineCounters:
        return cls(engine, parse_metrics(text, families=engine.metric_families()))

    @property
    def is_idle(self) -> bool | None:
        if self.running is None or self.waiting is None:
            return None
        return self.running + self.waiting == 0


async def read_counters(client: httpx.AsyncClient, endpoint: str, engine: type[EngineAdapter]) -> EngineCounters | None:
    """The engine's counters now, or None when it has no Prometheus /metrics."""
    response = await _get(client, "/metrics", endpoint)
    return EngineCounters.from_text(response.text, engine) if response is not None else None


@dataclass(frozen=True)
class WindowDeltas:
    """Counter deltas over one measurement window."""

    generation_tokens: float | None
    finished_requests: float | None
    spec_acceptance_length: float | None
    spec_acceptance_rate: float | None
    spec_acceptance_note: str = "no /metrics scrapes around the window"
    """Where the acceptance came from (the adapter's source and quote), or why there is none."""
    spec_acceptance_impossible: str = ""
    """Non-empty when the acceptance is outside its physical range (`llmval.engines.ranges`): no measurement."""
    counters_impossible: str = ""
    """Non-empty when a counter dropped over the window (the engine restarted, or another server answered a
    scrape): its deltas, and the other traffic they would reveal, measure nothing."""

    def foreign_tokens(self, own_tokens: int) -> float | None:
        """Tokens generated in the window that this run did not ask for (None if not countable)."""
        return None if self.generation_tokens is None else self.generation_tokens - own_tokens


def window_deltas(before: EngineCounters | None, after: EngineCounters | None) -> WindowDeltas:
    def delta(name: str) -> float | None:
        if before is None or after is None:
            return None
        a, b = getattr(after, name), getattr(before, name)
        return None if a is None or b is None else a - b

    if before is None or after is None:
        return WindowDeltas(None, None, None, None)
    accepted = after.engine.acceptance(before.metrics, after.metrics)
    note = accepted.missing or f"{accepted.source}: {accepted.quote}".rstrip(": ")
    names = after.engine.load_counters
    counted = (("generation_tokens", names.generation_tokens), ("finished_requests", names.finished_requests))
    dropped = outside_ranges([("counter_growth", grown, f"{name}: {getattr(before, key):g} -> {getattr(after, key):g}")
                              for key, name in counted if (grown := delta(key)) is not None]
                             + [("counter_value", value, f"{name} {when} the window")  # a count below 0 counts nothing
                                for key, name in counted for when, scrape in (("before", before), ("after", after))
                                if (value := getattr(scrape, key)) is not None])
    return WindowDeltas(
        generation_tokens=delta("generation_tokens"),
        finished_requests=delta("finished_requests"),
        spec_acceptance_length=None if accepted.impossible else accepted.length,
        spec_acceptance_rate=None if accepted.impossible else accepted.rate,
        spec_acceptance_note=accepted.impossible or note,
        spec_acceptance_impossible=accepted.impossible,
        counters_impossible=dropped,
    )


def with_log_acceptance(deltas: WindowDeltas, engine: type[EngineAdapter], before_log: str | None,
                        after_log: str | None, log_note: str = "") -> WindowDeltas:
    """`deltas`, their speculative acceptance taken from the engine log where /metrics has none (as
    the serving check does: `EngineAdapter.accept_length`): the lines logged between the reads before and after
    the window (`logs.lines_since`) through the adapter's `window_log_acceptance`. Unchanged when /metrics gave a
    length or an impossible one; when the log gives none either, the note says why for both."""
    if deltas.spec_acceptance_length is not None or deltas.spec_acceptance_impossible:
        return deltas
    if before_log is None or after_log is None:
        why = log_note or "no engine log declared (`logs`)"
        return dataclasses.replace(deltas, spec_acceptance_note=f"{deltas.spec_acceptance_note}; the engine log: {why}")
    logged = engine.window_log_acceptance(lines_since(before_log, after_log))
    if logged.missing or logged.length is None:
        return dataclasses.replace(deltas, spec_acceptance_note=f"{deltas.spec_acceptance_note}; the engine log: "
                                                                f"{logged.missing or 'no value'}")
    if logged.impossible:
        return dataclasses.replace(deltas, spec_acceptance_note=logged.impossible,
                                   spec_acceptance_impossible=logged.impossible)
    return dataclasses.replace(deltas, spec_acceptance_length=logged.length, spec_acceptance_rate=logged.rate,
                               spec_acceptance_note=f"{logged.source}: {logged.quote} (/metrics: "
                                                    f"{deltas.spec_acceptance_note})")


async def server_identity(client: httpx.AsyncClient, *, endpoint: str, engine: type[EngineAdapter], base_url: str,
                          declared: dict | None = None) -> dict:
    """What makes runs of this server comparable; `server_key(identity)` is its short hash."""
    identity: dict = {"endpoint": endpoint, "engine": engine.kind, "base_url": base_url}
    if (models := await _get(client, "/v1/models", endpoint)) is not None:
        what = f"[{endpoint}] GET /v1/models"
        cards = checked(ModelList, parse_json(models.text, what), what)["data"]
        identity["models"] = sorted(({k: m.get(k) for k in ("id", "root", "max_model_len")} for m in cards),
                                    key=lambda m: str(m["id"]))
    if (version := await _get(client, "/version", endpoint)) is not None:
        try:
            said = parse_json(version.text, f"[{endpoint}] GET /version")
        except EndpointError:  # not JSON (or over a bound): its first words name the version as well as any
            said = None
        identity["version"] = said.get("version") if isinstance(said, dict) else version.text[:80]
    info = None
    for path in engine.identity_info_paths:
        if (answer := await _get(client, path, endpoint)) is not None:
            info = parse_json(answer.text, f"[{endpoint}] GET {path}")
            if not isinstance(info, dict):
                raise EndpointError(f"[{endpoint}] GET {path}: the answer is not a JSON object "
                                    f"({type(info).__name__})")
            break
    metrics = None
    if (scrape := await _get(client, "/metrics", endpoint)) is not None:
        metrics = parse_metrics(scrape.text, f"[{endpoint}] GET /metrics", families=engine.metric_families())
    identity.update(engine.identity_extras(info, metrics))
    if declared:
        identity["declared"] = declared
    return identity


def server_key(identity: dict) -> str:
    """12 hex digits naming the server identity; equal keys ⇔ comparable deployments."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:12]
