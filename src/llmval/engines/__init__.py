"""Engine adapters: what an SGLang, vLLM or plain OpenAI-compatible endpoint says about itself.

`adapter_for(spec, client, read_log=...)` returns the adapter the inventory names; `detect_engine(client)`
says which engine actually answers (so a wrong `engine =` in the inventory is itself a finding). Adapters
read lazily and never judge; the contract tests in tests/serving/ compare their `Fact`s with the inventory.
Pure parsers (metrics text, log lines) live in `metrics.py` and `logs.py` and are tested offline.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from ..inventory import EndpointSpec
from .base import EndpointState, EngineAdapter, Fact, KvEvidence, NotExposed, StreamedChat
from .logs import normalize_dtype, parse_sglang_log, parse_vllm_log
from .logsource import launch_log_path, log_command
from .metrics import Metrics, parse_metrics
from .sglang import SglangAdapter
from .vllm import VllmAdapter

ADAPTERS: dict[str, type[EngineAdapter]] = {"sglang": SglangAdapter, "vllm": VllmAdapter, "openai": EngineAdapter}

__all__ = [
    "ADAPTERS",
    "EndpointState",
    "EngineAdapter",
    "Fact",
    "KvEvidence",
    "Metrics",
    "NotExposed",
    "SglangAdapter",
    "StreamedChat",
    "VllmAdapter",
    "adapter_for",
    "detect_engine",
    "launch_log_path",
    "log_command",
    "normalize_dtype",
    "parse_metrics",
    "parse_sglang_log",
    "parse_vllm_log",
]


def adapter_for(spec: EndpointSpec, client: httpx.Client, *, read_log: Callable[[], str] | None = None,
                state: EndpointState | None = None) -> EngineAdapter:
    """The adapter for the engine the inventory declares."""
    try:
        cls = ADAPTERS[spec.engine]
    except KeyError:
        raise ValueError(f"unknown engine {spec.engine!r}; valid: {sorted(ADAPTERS)}") from None
    return cls(spec, client, read_log=read_log, state=state)


def detect_engine(adapter: EngineAdapter) -> Fact:
    """Which engine answers: SGLang has /server_info (or /get_server_info); vLLM has /version and
    `owned_by: "vllm"` model cards; anything else is a plain OpenAI-compatible server."""
    owners = sorted({str(card.get("owned_by", "")) for card in adapter.model_cards})
    for path in ("/server_info", "/get_server_info"):
        response = adapter.request("GET", path)
        if response.status_code == 200:
            try:
                info = response.json()
            except ValueError:
                continue
            if isinstance(info, dict) and "version" in info and "model_path" in info:
                return Fact("sglang", f"GET {path} (SGLang ServerArgs keys)", f"version={info.get('version')}")
    response = adapter.request("GET", "/version")
    if response.status_code == 200 and "vllm" in owners:
        return Fact("vllm", "GET /version + /v1/models owned_by", f"{response.text[:80]}; owned_by={owners}")
    if "sglang" in owners:
        return Fact("sglang", "/v1/models owned_by", f"owned_by={owners}")
    return Fact("openai", "no engine-specific endpoint answered", f"owned_by={owners}")
