"""vLLM: `/health`, `/version`, `/v1/models`, `/metrics` (`vllm:cache_config_info`, spec-decode counters)
and the startup log (`non-default args`, the engine-config line, the FP8 KV warning, Ray worker lines).

Formats: vLLM 0.17.1 per ../shared/reference/engine.md §2, and a real vLLM 0.32.0 (CPU) capture in
selftest/data/engines/. Both print `Initializing a V1 LLM engine (v<version>) with config: ...`.
"""

from __future__ import annotations

import functools

from ..errors import EndpointError
from .base import EngineAdapter, Fact, KvEvidence, NotExposed, resolve_auto
from .logs import VllmLogFacts, normalize_dtype, parse_vllm_log
from .metrics import Metrics, delta

CACHE_CONFIG_INFO = "vllm:cache_config_info"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"


class VllmAdapter(EngineAdapter):
    """Facts of a vLLM endpoint."""

    kind = "vllm"

    @functools.cached_property
    def version(self) -> Fact:
        data = self.get_json("/version")
        if not isinstance(data, dict) or "version" not in data:
            raise EndpointError(f"[{self.spec.name}] GET /version: no `version` key: {str(data)[:200]}")
        return Fact(str(data["version"]), "GET /version", str(data))

    @functools.cached_property
    def log(self) -> VllmLogFacts:
        return parse_vllm_log(self.log_text)

    def _log_fact(self, value: object, what: str, quote: str) -> Fact:
        if value is None:
            raise NotExposed(f"[{self.spec.name}] the engine log states no {what} "
                             f"(the startup lines may have rotated out of the log)")
        return Fact(value, "engine log", quote)

    def model_dtype(self) -> Fact:
        return self._log_fact(self.log.model_dtype, "model dtype (dtype=torch.*)", self.log.engine_config_quote[:300])

    def kv_cache_evidence(self) -> list[KvEvidence]:
        """(1) `vllm:cache_config_info` cache_dtype label; (2) the engine-config log line. `auto` = model dtype."""
        evidence: list[KvEvidence] = []
        model_dtype = None
        try:
            model_dtype = self.log.model_dtype
        except NotExposed:
            pass
        infos = self.metrics().labels(CACHE_CONFIG_INFO)
        for labels in infos:
            raw = labels.get("cache_dtype", "?")
            evidence.append(KvEvidence(f"/metrics {CACHE_CONFIG_INFO}{{cache_dtype}}", raw,
                                       resolve_auto(raw, model_dtype), f'cache_dtype="{raw}"'))
        try:
            log = self.log
        except NotExposed:
            log = None
        if log is not None and log.kv_cache_dtype is not None:
            evidence.append(KvEvidence("engine log: engine config kv_cache_dtype= (auto = dtype=)",
                                       log.kv_cache_dtype, resolve_auto(log.kv_cache_dtype, log.model_dtype),
                                       f"kv_cache_dtype={log.kv_cache_dtype}, dtype=torch.{log.model_dtype}"))
        return evidence

    def kv_fp8_quotes(self) -> list[str]:
        quotes = []
        try:
            quotes += list(self.log.fp8_kv_quotes)
        except NotExposed:
            pass
        for labels in self.metrics().labels(CACHE_CONFIG_INFO):
            if normalize_dtype(labels.get("cache_dtype")) in {"fp8", "fp4"}:
                quotes.append(f'{CACHE_CONFIG_INFO}{{cache_dtype="{labels["cache_dtype"]}"}} 1.0')
        return quotes

    def attention_backend(self) -> Fact:
        backends = self.log.attention_backends
        if not backends:
            raise NotExposed(f"[{self.spec.name}] the engine log names no attention backend "
                             "(`Using <BACKEND> attention backend` appears on GPU platforms only)")
        return Fact(backends[0].value, "engine log", backends[0].quote)

    def speculative(self) -> dict[str, Fact]:
        config = self.log.non_default_args.get("speculative_config")
        quote = self.log.non_default_args_quote[:300]
        if not config:
            return {"algorithm": Fact(None, "engine log: non-default args (no speculative_config)", quote)}
        if isinstance(config, str):
            import json

            config = json.loads(config)
        return {
            "algorithm": Fact(config.get("method"), "engine log: speculative_config.method", quote),
            "num_steps": Fact(config.get("num_speculative_tokens"),
                              "engine log: speculative_config.num_speculative_tokens", quote),
        }

    def tool_call_parser(self) -> Fact:
        args, quote = self.log.non_default_args, self.log.non_default_args_quote[:400]
        if not quote:
            raise NotExposed(f"[{self.spec.name}] the engine log has no `non-default args` line")
        auto = args.get("enable_auto_tool_choice", False)
        return Fact(args.get("tool_call_parser"),
                    f"engine log: non-default args (enable_auto_tool_choice={auto})", quote)

    def reasoning_parser(self) -> Fact:
        args, quote = self.log.non_default_args, self.log.non_default_args_quote[:400]
        if not quote:
            raise NotExposed(f"[{self.spec.name}] the engine log has no `non-default args` line")
        return Fact(args.get("reasoning_parser"), "engine log: non-default args", quote)

    def tensor_parallel_size(self) -> Fact:
        return self._log_fact(self.log.tensor_parallel_size, "tensor_parallel_size",
                              self.log.engine_config_quote[:300])

    def nodes(self) -> Fact:
        """1 unless Ray spreads workers: then the distinct IPs of `(RayWorkerWrapper pid=, ip=)` lines."""
        backend = self.log.distributed_executor_backend
        ips = self.log.ray_worker_ips
        if backend == "ray" or ips:
            if not ips:
                raise NotExposed(f"[{self.spec.name}] Ray backend but no `(RayWorkerWrapper pid=.., ip=..)` lines "
                                 "in the log; check `ray list nodes` on the head")
            return Fact(len(ips), "engine log: distinct RayWorkerWrapper ips",
                        f"ips={list(ips)}; {self.log.cross_node_quote}".strip("; "))
        return Fact(1, f"engine log: executor backend {backend or 'default (mp/uni)'}, no Ray workers",
                    self.log.non_default_args_quote[:200])

    def executor_backend(self) -> Fact:
        """`distributed_executor_backend` from the non-default args; absent means vLLM's default (mp / uni)."""
        args, quote = self.log.non_default_args, self.log.non_default_args_quote[:300]
        if not quote:
            raise NotExposed(f"[{self.spec.name}] the engine log has no `non-default args` line")
        backend = args.get("distributed_executor_backend")
        tp = int(args.get("tensor_parallel_size", 1)) * int(args.get("pipeline_parallel_size", 1))
        return Fact(backend or ("mp" if tp > 1 else "uni"), "engine log: non-default args", quote)

    def acceptance_snapshot(self) -> Metrics:
        return self.metrics()

    def accept_length(self, before: Metrics, after: Metrics) -> Fact:
        """Mean acceptance length over the traffic between two scrapes: 1 + Δaccepted / Δdrafts."""
        drafts, accepted = delta(before, after, SPEC_DRAFTS), delta(before, after, SPEC_ACCEPTED)
        if drafts is None or accepted is None:
            raise NotExposed(f"[{self.spec.name}] /metrics has no {SPEC_DRAFTS}/{SPEC_ACCEPTED} "
                             "(registered only when speculative decoding is configured)")
        if drafts <= 0:
            return Fact(None, "/metrics spec_decode deltas", f"Δdrafts={drafts:g}: the drafter never ran")
        return Fact(round(1 + accepted / drafts, 3), "/metrics 1 + Δaccepted/Δdrafts",
                    f"Δ{SPEC_ACCEPTED}={accepted:g}, Δ{SPEC_DRAFTS}={drafts:g}")
