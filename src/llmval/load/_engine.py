"""What the engine says about itself: its identity (the baseline key) and its counters around a run.

`server_identity` collects what makes two deployments comparable (engine and version, model and
its path, context length, KV-cache dtype/block size/prefix caching, speculative config) and hashes it
into `server_key`; a baseline is only ever compared with a run of the same key.

`EngineCounters` are `/metrics` samples taken before and after a run. Their deltas give the
speculative acceptance over exactly that window (vLLM's `fetch_spec_decode_metrics`: length =
1 + Δaccepted/Δdrafts, rate = Δaccepted/Δdraft_tokens) and reveal *other* traffic: generated tokens
the engine counted beyond this run's own say someone else was loading the server.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ..errors import EndpointError, ParseError

# vllm:cache_config_info labels that change performance; the rest (block counts) vary with memory.
CACHE_LABELS = ("cache_dtype", "block_size", "enable_prefix_caching", "kv_cache_memory_bytes")
SGLANG_INFO_KEYS = ("model_path", "tp_size", "dp_size", "ep_size", "kv_cache_dtype", "speculative_algorithm",
                    "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
                    "attention_backend", "version")


async def _get(client: httpx.AsyncClient, path: str, endpoint: str) -> httpx.Response | None:
    try:
        response = await client.get(path)
    except httpx.HTTPError as error:
        raise EndpointError(f"[{endpoint}] GET {path}: {type(error).__name__}: {error}") from error
    return response if response.status_code == 200 else None


Sample = tuple[str, dict[str, str], float]


def parse_samples(text: str, source: str = "/metrics") -> list[Sample]:
    """Prometheus text → [(name, labels, value)]; counters keep their `_total` sample name."""
    try:
        return [(sample.name, dict(sample.labels), float(sample.value))
                for family in text_string_to_metric_families(text) for sample in family.samples]
    except ValueError as error:
        raise ParseError(source, f"not Prometheus text format: {error}", text[:200]) from None


def _sum(samples: list[Sample], name: str) -> float | None:
    values = [value for sample_name, _, value in samples if sample_name == name]
    return sum(values) if values else None


@dataclass(frozen=True)
class EngineCounters:
    """The engine's cumulative counters at one moment (None where the engine has no such counter)."""

    generation_tokens: float | None
    finished_requests: float | None
    running: float | None
    waiting: float | None
    spec_drafts: float | None
    spec_draft_tokens: float | None
    spec_accepted_tokens: float | None

    @classmethod
    def from_text(cls, text: str) -> EngineCounters:
        s = parse_samples(text)
        return cls(
            generation_tokens=_sum(s, "vllm:generation_tokens_total"),
            finished_requests=_sum(s, "vllm:request_success_total"),
            running=_sum(s, "vllm:num_requests_running"),
            waiting=_sum(s, "vllm:num_requests_waiting"),
            spec_drafts=_sum(s, "vllm:spec_decode_num_drafts_total"),
            spec_draft_tokens=_sum(s, "vllm:spec_decode_num_draft_tokens_total"),
            spec_accepted_tokens=_sum(s, "vllm:spec_decode_num_accepted_tokens_total"),
        )

    @property
    def is_idle(self) -> bool | None:
        if self.running is None or self.waiting is None:
            return None
        return self.running + self.waiting == 0


async def read_counters(client: httpx.AsyncClient, endpoint: str) -> EngineCounters | None:
    """The engine's counters now, or None when it has no Prometheus /metrics."""
    response = await _get(client, "/metrics", endpoint)
    return EngineCounters.from_text(response.text) if response is not None else None


@dataclass(frozen=True)
class WindowDeltas:
    """Counter deltas over one measurement window."""

    generation_tokens: float | None
    finished_requests: float | None
    spec_acceptance_length: float | None
    spec_acceptance_rate: float | None

    def foreign_tokens(self, own_tokens: int) -> float | None:
        """Tokens generated in the window that this run did not ask for (None if not countable)."""
        return None if self.generation_tokens is None else self.generation_tokens - own_tokens


def window_deltas(before: EngineCounters | None, after: EngineCounters | None) -> WindowDeltas:
    def delta(name: str) -> float | None:
        if before is None or after is None:
            return None
        a, b = getattr(after, name), getattr(before, name)
        return None if a is None or b is None else a - b

    drafts, draft_tokens, accepted = delta("spec_drafts"), delta("spec_draft_tokens"), delta("spec_accepted_tokens")
    return WindowDeltas(
        generation_tokens=delta("generation_tokens"),
        finished_requests=delta("finished_requests"),
        spec_acceptance_length=(1 + accepted / drafts) if drafts and accepted is not None else None,
        spec_acceptance_rate=(accepted / draft_tokens) if draft_tokens and accepted is not None else None,
    )


async def server_identity(client: httpx.AsyncClient, *, endpoint: str, engine: str, base_url: str,
                          declared: dict | None = None) -> dict:
    """What makes runs of this server comparable; `server_key(identity)` is its short hash."""
    identity: dict = {"endpoint": endpoint, "engine": engine, "base_url": base_url}
    if (models := await _get(client, "/v1/models", endpoint)) is not None:
        identity["models"] = sorted(
            ({k: m.get(k) for k in ("id", "root", "max_model_len")} for m in models.json().get("data", [])),
            key=lambda m: str(m["id"]))
    if (version := await _get(client, "/version", endpoint)) is not None:
        try:
            identity["version"] = version.json().get("version")
        except ValueError:
            identity["version"] = version.text[:80]
    if engine == "sglang":
        for path in ("/server_info", "/get_server_info"):
            if (info := await _get(client, path, endpoint)) is not None:
                body = info.json()
                identity["server_info"] = {k: body.get(k) for k in SGLANG_INFO_KEYS if k in body}
                break
    if (metrics := await _get(client, "/metrics", endpoint)) is not None:
        for name, labels, _ in parse_samples(metrics.text):
            if name == "vllm:cache_config_info":
                identity["cache"] = {k: labels[k] for k in CACHE_LABELS if k in labels}
                break
    if declared:
        identity["declared"] = declared
    return identity


def server_key(identity: dict) -> str:
    """12 hex digits naming the server identity; equal keys ⇔ comparable deployments."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:12]
