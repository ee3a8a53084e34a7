"""Engine adapters: what an SGLang, vLLM or plain OpenAI-compatible endpoint says about itself.

`adapter_for(spec, client, read_log=...)` returns the adapter the inventory names, `adapter_class(spec)`
its class (what `llmval.load` and `llmval.needle` take: metric names, acceptance math, tokenize form,
server identity); `detect_engine(client)` says which engine actually answers (so a wrong `engine =` in
the inventory is itself a finding). Adapters read lazily and never judge; the contract tests in
tests/serving/ compare their `Fact`s with the inventory.
Pure parsers (metrics text, log lines) live in `metrics.py` and `logs.py` and are tested offline.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import httpx

from ..inventory import EndpointSpec, use_engine_registry
from .base import (
    Acceptance,
    CacheHits,
    EndpointState,
    EngineAdapter,
    Fact,
    KvEvidence,
    LoadCounters,
    ModelNotServed,
    NotExposed,
    SampledMetrics,
)
from .logs import normalize_dtype, parse_sglang_log, parse_vllm_log
from .logsource import launch_log_of, launch_log_path
from .metrics import Metrics, parse_metrics
from .ranges import RANGES, ImpossibleMetric, PhysicalRange, accept_length_ceiling, out_of_range
from .serving_process import StaleEvidence
from .sglang import SglangAdapter
from .stream import StreamedChat, join_chat_stream
from .vllm import VllmAdapter


def _registry() -> dict[str, type[EngineAdapter]]:
    """Every `EngineAdapter` subclass defined in a module of this package (each module is imported here: there is
    no list to edit), keyed by its `kind`, in detection order: by kind, then the plain OpenAI-compatible server
    (`EngineAdapter` itself: what is left when no engine's `detect` answered)."""
    found: dict[str, type[EngineAdapter]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, EngineAdapter) and value is not EngineAdapter
                    and value.__module__ == module.__name__):
                if value.kind in found or value.kind == EngineAdapter.kind:
                    other = found.get(value.kind, EngineAdapter)
                    raise ValueError(f"engine adapter {value.__qualname__} ({module.__name__}) has kind {value.kind!r},"
                                     f" already {other.__qualname__}'s: give it a kind of its own")
                found[value.kind] = value
    return {**dict(sorted(found.items())), EngineAdapter.kind: EngineAdapter}


# The registry: one entry per engine, in detection order. The inventory's `engine =` choices, its JSON schema,
# `llmval init --engine` and the CLI's choices are its kinds (selftest/engines/test_registry.py).
ADAPTERS: dict[str, type[EngineAdapter]] = _registry()
use_engine_registry(ADAPTERS)

__all__ = [
    "ADAPTERS",
    "RANGES",
    "Acceptance",
    "CacheHits",
    "EndpointState",
    "EngineAdapter",
    "Fact",
    "ImpossibleMetric",
    "KvEvidence",
    "LoadCounters",
    "Metrics",
    "ModelNotServed",
    "NotExposed",
    "PhysicalRange",
    "SampledMetrics",
    "SglangAdapter",
    "StaleEvidence",
    "StreamedChat",
    "VllmAdapter",
    "accept_length_ceiling",
    "adapter_class",
    "adapter_for",
    "detect_engine",
    "join_chat_stream",
    "launch_log_of",
    "launch_log_path",
    "normalize_dtype",
    "out_of_range",
    "parse_metrics",
    "parse_sglang_log",
    "parse_vllm_log",
]


def adapter_class(spec: EndpointSpec | str) -> type[EngineAdapter]:
    """The adapter class of the engine an endpoint (or an engine kind) names.

    >>> adapter_class("vllm").load_counters.generation_tokens
    'vllm:generation_tokens'
    """
    kind = spec if isinstance(spec, str) else spec.engine
    try:
        return ADAPTERS[kind]
    except KeyError:
        raise ValueError(f"unknown engine {kind!r}; valid: {sorted(ADAPTERS)}") from None


def adapter_for(spec: EndpointSpec, client: httpx.Client, *, read_log: Callable[[], str] | None = None,
                state: EndpointState | None = None, read_log_errors: Callable[[], str] | None = None) -> EngineAdapter:
    """The adapter for the engine the inventory declares."""
    return adapter_class(spec)(spec, client, read_log=read_log, state=state, read_log_errors=read_log_errors)


def detect_engine(adapter: EngineAdapter) -> Fact:
    """Which engine answers: each registered engine's `detect`, in registry order (SGLang's /server_info,
    then vLLM's /version with `owned_by: "vllm"` cards, ...); none: a plain OpenAI-compatible server."""
    owners = sorted({str(card.get("owned_by", "")) for card in adapter.model_cards})
    for cls in ADAPTERS.values():
        if (found := cls.detect(adapter, owners)) is not None:
            return found
    return Fact("openai", "no engine-specific endpoint answered", f"owned_by={owners}")
