"""SGLang: `/server_info` (falling back to the deprecated `/get_server_info`), `/model_info`, `/v1/models`,
`/metrics` (only with --enable-metrics) and the startup log.

Formats: SGLang 0.5.9 / 0.5.10.post1 / 0.5.23 per ../shared/reference/engine.md §1. The KV dtype is logged
as `Using KV cache dtype: torch.X` (0.5.9/0.5.10) and/or in the `KV Cache is allocated. dtype: X` pool line
(already in 0.5.11/0.5.13 builds, the only one from 0.5.23): both are read whatever the version says.
"""

from __future__ import annotations

import functools
import re

from ..core.contract import excerpt
from ..core.errors import EndpointError, LlmvalError
from ..io.answers import parse_json
from .base import Acceptance, CacheHits, EngineAdapter, Fact, KvEvidence, NotExposed, SampledMetrics
from .identity import ModelEvidence
from .logs import (
    SGLANG_DEATH_LINES,
    TORCH_DEATH_LINES,
    SglangLogFacts,
    is_quantized_kv,
    normalize_dtype,
    parse_sglang_log,
)
from .logsource import MAX_PERIODIC_LINES
from .metrics import Metrics, Sample, delta

# Every SGLang metric name the suite reads, once (counters by family name: `Metrics` also matches `_total`).
# Checked in the 0.5.9 wheel's sglang/srt/metrics/collector.py, the 0.5.10.post1 and 0.5.23 wheels'
# sglang/srt/observability/metrics_collector.py, and the repository at commits 93d04878, 00ae9c15 (metrics/) and
# 44cedc2b, 016d8605 (observability/): every name below is in all of them except spec_verify_calls_total (0.5.23 and
# 016d8605 only; the REAL 0.5.17 scrape on the lent H200 has it too, and every other name: selftest/serving/
# test_real_h200_sglang.py). Scheduler gauges (SchedulerMetricsCollector) carry model_name, engine_type, tp_rank,
# pp_rank, moe_ep_rank [+ dp_rank] [+ priority]; tokenizer counters (TokenizerMetricsCollector) carry model_name
# [+ priority] [+ cache_source on cached tokens from 0.5.9] [+ is_streaming on prompt/generation tokens in 0.5.23].
# `Metrics.total` sums every label set.
SPEC_ACCEPT_LENGTH = "sglang:spec_accept_length"  # gauge, the last 40-step window
GENERATION_TOKENS = "sglang:generation_tokens"  # counter sglang:generation_tokens_total
SPEC_VERIFY_CALLS = "sglang:spec_verify_calls"  # counter sglang:spec_verify_calls_total (0.5.17 REAL scrape, 0.5.23)
# Sampled through every perf window.
QUEUE_REQS = "sglang:num_queue_reqs"  # gauge
RUNNING_REQS = "sglang:num_running_reqs"  # gauge
TOKEN_USAGE = "sglang:token_usage"  # gauge (newest: the fullest of the full/SWA/mamba pools)
RETRACTED_REQS = "sglang:num_retracted_reqs"  # gauge: retracted since the previous stats log (pid label)
CACHE_HIT_RATE = "sglang:cache_hit_rate"  # gauge
PROMPT_TOKENS = "sglang:prompt_tokens"  # counter sglang:prompt_tokens_total
CACHED_TOKENS = "sglang:cached_tokens"  # counter sglang:cached_tokens_total
# With --enable-priority-scheduling (0.5.10.post1 and 0.5.23, `_log_gauge_queue_count`) num_running_reqs and
# num_queue_reqs hold the total at priority="" and each priority's part again at priority="<int>": summing
# every sample would count each request twice, so those parts are dropped. The tokenizer's counters are split by
# the same label the other way (each finished request once, under its own priority): they are summed whole.
BREAKDOWN_LABEL = "priority"
BROKEN_DOWN = (QUEUE_REQS, RUNNING_REQS)
# SGLang's /metrics is prometheus_client's multiprocess collector: a labelled counter has no sample until its
# first increment. The tokenizer increments cached_tokens_total only when a finished request had cached tokens
# (`if cached_tokens > 0`), prompt_tokens_total at every finished request: with the latter present, the former
# absent means 0.
SERVER_INFO_PATHS = ("/server_info", "/get_server_info")
# /server_info keys that make two SGLang deployments comparable in perf (the perf server identity).
IDENTITY_INFO_KEYS = ("model_path", "tp_size", "dp_size", "ep_size", "kv_cache_dtype", "speculative_algorithm",
                      "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
                      "attention_backend", "version")


def _one_source(lines: list[tuple[str, str]], source: str) -> KvEvidence | None:
    """Lines of one log shape are ONE source, however often they repeat (SGLang prints the allocation once per
    pool, target and draft, and per TP rank): agreeing dtypes give one evidence, differing ones a mixed value."""
    if not lines:
        return None
    dtypes = sorted({dtype for dtype, _ in lines})
    quote = " | ".join(dict.fromkeys(q for _, q in lines))[:600]
    if len(dtypes) == 1:
        return KvEvidence(f"{source} ({len(lines)} line(s), one source)", dtypes[0], dtypes[0], quote)
    mixed = "mixed: " + ", ".join(dtypes)
    return KvEvidence(f"{source} ({len(lines)} lines disagree)", mixed, mixed, quote)


class SglangAdapter(EngineAdapter):
    """Facts of an SGLang endpoint."""

    kind = "sglang"
    default_port = 30000
    has_version = True
    has_health = True
    death_lines = (*SGLANG_DEATH_LINES, *TORCH_DEATH_LINES)
    prefix_cache_hint = "the radix (prefix) cache off (--disable-radix-cache: drop it)"
    # load_counters: none declared yet. SGLang's request gauges and generated-token counter are not yet
    # checked against a real scrape under data parallelism, so perf windows count no other traffic here.
    tokenize_form = "prompt"  # 0.5.17 takes `messages` too (TokenizeRequest); older releases a prompt only
    # As SGLang 0.5.17 answered on the lent H200 (HTTP 400; selftest/data/replays/REAL-h200-sglang-0.5.17-contract):
    # "Input length (8191 tokens) exceeds the maximum allowed length (8186 tokens). ..." and
    # "The input (8202 tokens) is longer than the model's context length (8192 tokens)."
    length_refusals = (re.compile(r"Input length \((\d+) tokens\) exceeds the maximum allowed length"),
                       re.compile(r"The input \((\d+) tokens\) is longer than the model's context length"))
    tokenize_failure_hint = (
        "SGLang 0.5.17 answers HTTP 500 to every /tokenize (`TypeError: Integer exceeds 64-bit range` in its log) "
        "when the tokenizer has no model_max_length (transformers then reports 1e30, which its JSON encoder "
        "refuses): set model_max_length in the model's tokenizer_config.json")
    thinking_off = {"chat_template_kwargs": {"enable_thinking": False}}
    honours_ignore_eos = True
    # `--speculative-algorithm` choices of SGLang 0.5.10-0.5.17 (server_args.py): EAGLE, EAGLE3, NEXTN, STANDALONE,
    # NGRAM; `_handle_speculative_decoding` rewrites NEXTN to EAGLE, so /server_info never says NEXTN.
    speculative_algorithms = frozenset({"EAGLE", "EAGLE3", "STANDALONE", "NGRAM"})
    speculative_reported_as = {"NEXTN": "EAGLE"}
    identity_info_paths = SERVER_INFO_PATHS
    # SGLang 0.5.17 answers a 200 with finish_reason "abort" (FINISH_ABORT without a status code) when the
    # grammar rejects the token the model sampled: scheduler_components/batch_result_processor.py logs
    # "Grammar accept_token failed for req <rid> with token <id>: <error>" and counts
    # sglang:num_grammar_aborted_total. With tools, SGLang constrains tool_choice "required" (or a named tool) by
    # the --tool-call-parser's structural tag (hermes: <tool_call>...) or a JSON schema, and keeps special
    # tokens in content (skip_special_tokens=False): an EOS such as <|endoftext|> mid-JSON is that rejected
    # token. The other graceful aborts are an /abort_request or a session's cleanup, not the model's output.
    # A grammar that fails to compile aborts with 400 instead (an http_error naming "Failed to compile").
    abort_hint = (
        "SGLang aborted the constrained generation (finish_reason \"abort\"): its grammar backend rejected the "
        "token the model sampled (tool_choice \"required\" is constrained by the tool-call parser's structural tag "
        "or a JSON schema). Look in the server log for \"Grammar accept_token failed for req ... with token ...\" "
        "(and sglang:num_grammar_aborted_total in /metrics); try another --grammar-backend (xgrammar is the "
        "default; llguidance, outlines), check that --tool-call-parser fits the model's chat template, and "
        "compare with tool_choice \"auto\"")
    sampled_metrics = SampledMetrics(waiting=QUEUE_REQS, running=RUNNING_REQS, kv_cache_usage=TOKEN_USAGE,
                                     retracted=RETRACTED_REQS, prefix_cache_queries=PROMPT_TOKENS,
                                     prefix_cache_hits=CACHED_TOKENS, prefix_cache_hit_rate=CACHE_HIT_RATE,
                                     spec_accept_length=SPEC_ACCEPT_LENGTH)
    read_metrics = frozenset({GENERATION_TOKENS, SPEC_VERIFY_CALLS})

    @classmethod
    def detect(cls, adapter: EngineAdapter, owners: list[str]) -> Fact | None:
        """SGLang answers /server_info (or /get_server_info) with its ServerArgs keys, or owns its cards."""
        for path in SERVER_INFO_PATHS:
            response = adapter.request("GET", path)
            if response.status_code == 200:
                try:
                    info = parse_json(response.text, f"[{adapter.spec.name}] GET {path}")
                except EndpointError:  # over a bound or not JSON: not SGLang's ServerArgs
                    continue
                if isinstance(info, dict) and "version" in info and "model_path" in info:
                    return Fact("sglang", f"GET {path} (SGLang ServerArgs keys)", f"version={info.get('version')}")
        if "sglang" in owners:
            return Fact("sglang", "/v1/models owned_by", f"owned_by={owners}")
        return None

    @classmethod
    def identity_extras(cls, info: dict | None, metrics: Metrics | None) -> dict:
        """The performance-relevant `/server_info` keys (parallelism, KV dtype, speculative settings)."""
        if info is None:
            return {}
        return {"server_info": {k: info.get(k) for k in IDENTITY_INFO_KEYS if k in info}}

    @functools.cached_property
    def server_info(self) -> dict:
        """GET /server_info, or /get_server_info on servers that predate it (404)."""
        for path in SERVER_INFO_PATHS:
            response = self.request("GET", path)
            if response.status_code == 404:
                continue
            if response.status_code >= 400:
                raise EndpointError(f"[{self.spec.name}] GET {path}: HTTP {response.status_code}: "
                                    f"{excerpt(response.text)}")
            data = parse_json(response.text, f"[{self.spec.name}] GET {path}")  # EndpointError naming the bound
            if not isinstance(data, dict):
                raise EndpointError(f"[{self.spec.name}] GET {path}: not a JSON object")
            self._server_info_path = path
            return data
        raise EndpointError(f"[{self.spec.name}] neither /server_info nor /get_server_info exists (404): "
                            "is this an SGLang server?")

    def _info_fact(self, key: str) -> Fact:
        info = self.server_info
        if key not in info:
            raise NotExposed(f"[{self.spec.name}] {self._server_info_path} has no `{key}` (SGLang {self._ver})")
        return Fact(info[key], f"{self._server_info_path} {key}", f'"{key}": {info[key]!r}')

    @property
    def _ver(self) -> str:
        return str(self.server_info.get("version", "?"))

    @functools.cached_property
    def version(self) -> Fact:
        return self._info_fact("version")

    @functools.cached_property
    def log(self) -> SglangLogFacts:
        return parse_sglang_log(self.log_text)

    def _internal_states(self) -> list[dict]:
        states = self.server_info.get("internal_states")
        return [s for s in states if isinstance(s, dict)] if isinstance(states, list) else []

    def model_dtype(self) -> Fact:
        return self._info_fact("dtype")

    def kv_cache_evidence(self) -> list[KvEvidence]:
        """(1) `internal_states[*].kv_cache_dtype` (the scheduler's resolved copy); (2) the startup log."""
        evidence: list[KvEvidence] = []
        self.server_info  # noqa: B018 - resolves which server-info path answers
        path = self._server_info_path
        for i, state in enumerate(self._internal_states()):
            if "kv_cache_dtype" in state:
                raw = str(state["kv_cache_dtype"])
                resolved, how = resolve_sglang_kv(raw, self.server_info)
                evidence.append(KvEvidence(f"{path} internal_states[{i}].kv_cache_dtype{how}", raw, resolved,
                                           f'"kv_cache_dtype": "{raw}"'))
        try:
            log = self.log
        except NotExposed:
            return evidence
        # Both line shapes, whatever the version reports: `Using KV cache dtype:` (0.5.9/0.5.10) and the pool line's
        # `dtype:` (already in 0.5.11/0.5.13 builds, the only one from 0.5.23). They are one source, the log.
        lines = [(line.value, line.quote) for line in log.kv_dtypes]
        lines += [(a.dtype, a.quote) for a in log.kv_allocations if a.dtype]
        shapes = " + ".join(shape for shape, present in (("Using KV cache dtype:", log.kv_dtypes),
                                                         ("KV Cache is allocated. dtype:",
                                                          any(a.dtype for a in log.kv_allocations))) if present)
        if (found := _one_source(lines, f"engine log: {shapes}")) is not None:
            evidence.append(found)
        return evidence

    def kv_fp8_quotes(self) -> list[str]:
        quotes = []
        top = str(self.server_info.get("kv_cache_dtype", ""))
        if is_quantized_kv(top):
            quotes.append(f'{self._server_info_path} "kv_cache_dtype": "{top}"')
        for i, state in enumerate(self._internal_states()):
            if is_quantized_kv(str(state.get("kv_cache_dtype", ""))):
                quotes.append(f'internal_states[{i}] "kv_cache_dtype": "{state["kv_cache_dtype"]}"')
        try:
            quotes += list(self.log.fp8_kv_quotes)
        except NotExposed:
            pass
        return quotes

    def attention_backend(self) -> Fact:
        return self._info_fact("attention_backend")

    def speculative(self) -> dict[str, Fact]:
        keys = {"algorithm": "speculative_algorithm", "num_steps": "speculative_num_steps",
                "eagle_topk": "speculative_eagle_topk", "num_draft_tokens": "speculative_num_draft_tokens"}
        return {name: self._info_fact(key) for name, key in keys.items()}

    @functools.cached_property
    def model_info(self) -> dict:
        """GET /model_info (or the deprecated /get_model_info); from 0.5.23 it also names the parsers."""
        for path in ("/model_info", "/get_model_info"):
            response = self.request("GET", path)
            if response.status_code == 200:
                try:
                    data = parse_json(response.text, f"[{self.spec.name}] GET {path}")
                except EndpointError:
                    break
                return data if isinstance(data, dict) else {}
        return {}

    def engine_model_evidence(self) -> list[ModelEvidence]:
        """`/server_info` `served_model_name` and `model_path`; `/model_info` (`/get_model_info`) `model_path`, where
        it answers (older servers, and recordings made before the suite asked it, have none); the startup log's
        `server_args=ServerArgs(model_path=..., served_model_name=...)` where the log is declared."""
        info, found = self.server_info, []
        names = (str(info["served_model_name"]),) if info.get("served_model_name") else ()
        path = str(info["model_path"]) if info.get("model_path") else None
        if names or path:
            found.append(ModelEvidence(f"{self._server_info_path} served_model_name/model_path", names, path,
                                       f"served_model_name={info.get('served_model_name')!r}, "
                                       f"model_path={info.get('model_path')!r}"))
        try:
            model_info = self.model_info
        except LlmvalError:
            model_info = {}
        if model_info.get("model_path"):
            found.append(ModelEvidence("/model_info model_path", (), str(model_info["model_path"]),
                                       f"model_path={model_info['model_path']!r}"))
        try:
            args = self.log.server_args
        except LlmvalError:
            args = {}  # no log declared, or not readable: the HTTP sources stand
        log_names = (str(args["served_model_name"]),) if args.get("served_model_name") else ()
        log_path = str(args["model_path"]) if args.get("model_path") else None
        if log_names or log_path:
            found.append(ModelEvidence("engine log: server_args model_path/served_model_name", log_names, log_path,
                                       self.log.server_args_quote[:300]))
        return found

    def _parser_fact(self, key: str) -> Fact:
        """/server_info first; servers whose /server_info lacks the key may name it in /model_info (0.5.23)."""
        if key in self.server_info:
            return self._info_fact(key)
        if key in self.model_info:
            return Fact(self.model_info[key], f"/model_info {key}", f'"{key}": {self.model_info[key]!r}')
        return self._info_fact(key)

    def tool_call_parser(self) -> Fact:
        return self._parser_fact("tool_call_parser")

    def reasoning_parser(self) -> Fact:
        return self._parser_fact("reasoning_parser")

    def tensor_parallel_size(self) -> Fact:
        return self._info_fact("tp_size")

    def nodes(self) -> Fact:
        return self._info_fact("nnodes")

    def log_acceptance(self) -> Acceptance:
        """The latest `Decode batch. ... accept len: X` line (the scheduler's last decode-log window, every
        --decode-log-interval steps; the source says it is not exactly this check's traffic)."""
        lengths = self.log.accept_lengths
        if not lengths:
            return Acceptance(None, None, "engine log", missing="no `Decode batch. ... accept len:` line in the log "
                              "(SGLang prints one every --decode-log-interval decode steps with speculation)")
        return Acceptance(lengths[-1], None, f"engine log: the latest of {len(lengths)} `Decode batch` accept len "
                          "lines", self.log.accept_quote)

    def acceptance_snapshot(self) -> Metrics:
        return self.metrics()

    @classmethod
    def window_log_acceptance(cls, window: str) -> Acceptance:
        """The mean of the `Decode batch. ... accept len:` values logged in the window (each over one
        --decode-log-interval of decode steps; the lines carry no step counts to weight them by)."""
        facts = parse_sglang_log(window)
        if not facts.accept_lengths:
            return Acceptance(None, None, "engine log", missing="no `Decode batch. ... accept len:` line logged "
                              "during the window (SGLang prints one every --decode-log-interval decode steps)")
        return Acceptance(sum(facts.accept_lengths) / len(facts.accept_lengths), None,
                          f"engine log: the mean of the {len(facts.accept_lengths)} `Decode batch` accept len "
                          f"line(s) logged during the window (the log read keeps its last {MAX_PERIODIC_LINES} "
                          "periodic lines)", facts.accept_quote)

    @classmethod
    def normalize_metrics(cls, metrics: Metrics) -> Metrics:
        """Drop the queue gauges' per-priority breakdown samples; read an absent cached_tokens_total as 0 where
        prompt_tokens_total is present (see BREAKDOWN_LABEL and the note below it)."""
        samples = tuple(s for s in metrics.samples if not (s.name in BROKEN_DOWN and s.labels.get(BREAKDOWN_LABEL)))
        if metrics.has(PROMPT_TOKENS) and not metrics.has(CACHED_TOKENS):
            samples += (Sample(f"{CACHED_TOKENS}_total", {}, 0.0),)
        return metrics if samples == metrics.samples else Metrics(samples)

    @classmethod
    def acceptance(cls, before: Metrics, after: Metrics) -> Acceptance:
        """Over the window: Δgeneration_tokens / Δspec_verify_calls (0.5.17 REAL, 0.5.23); else the
        `sglang:spec_accept_length` gauge after the traffic, which covers the last 40-step window only.
        SGLang counts no proposed draft tokens, so there is no acceptance rate."""
        tokens, verifies = _grown(before, after, GENERATION_TOKENS), _grown(before, after, SPEC_VERIFY_CALLS)
        growth = ((GENERATION_TOKENS, tokens), (SPEC_VERIFY_CALLS, verifies))
        if tokens is not None and verifies:
            return Acceptance(tokens / verifies, None, "/metrics Δgeneration_tokens/Δspec_verify_calls",
                              f"Δ{GENERATION_TOKENS}={tokens:g}, Δ{SPEC_VERIFY_CALLS}={verifies:g}", growth=growth)
        gauge = after.total(SPEC_ACCEPT_LENGTH)
        if gauge is None:
            return Acceptance(None, None, "/metrics", missing=f"/metrics has no {SPEC_ACCEPT_LENGTH} (needs "
                              "--enable-metrics and speculative decoding)")
        if not tokens:
            return Acceptance(None, None, f"/metrics {SPEC_ACCEPT_LENGTH}", "no tokens generated between the scrapes",
                              growth=growth)
        if gauge == 0:  # the gauge before SGLang's first speculative decode log: unset, not a length
            return Acceptance(None, None, f"/metrics {SPEC_ACCEPT_LENGTH}", f"{SPEC_ACCEPT_LENGTH} 0 (not yet set: "
                              "no speculative decode stats logged)")
        return Acceptance(gauge, None, f"/metrics {SPEC_ACCEPT_LENGTH} (last 40-step window, after this run's "
                          f"{tokens:g} generated tokens)", f"{SPEC_ACCEPT_LENGTH} {gauge:g}")

    @classmethod
    def prefix_cache_hits(cls, before: Metrics, after: Metrics) -> CacheHits:
        """Δsglang:cached_tokens / Δsglang:prompt_tokens over the window (tokenizer counters); without them the
        `sglang:cache_hit_rate` gauge after the window, which covers only the scheduler's latest prefill batches
        (the source says so)."""
        before, after = cls.normalize_metrics(before), cls.normalize_metrics(after)
        prompt, cached = _grown(before, after, PROMPT_TOKENS), _grown(before, after, CACHED_TOKENS)
        if prompt is None or cached is None:
            rates = [sample.value for sample in after.find(CACHE_HIT_RATE)]  # one per scheduler (tp/dp rank)
            gauge = sum(rates) / len(rates) if rates else None
            if gauge is not None:  # the scheduler's own rate, of its latest prefill batches only: said so
                return CacheHits(gauge, None, None, f"/metrics {CACHE_HIT_RATE} gauge after the window (the "
                                 f"scheduler's latest prefill batches, 0 after a decode log on 0.5.9/0.5.10; no "
                                 f"{PROMPT_TOKENS}/{CACHED_TOKENS} counters)")
            return CacheHits(None, None, None, "/metrics", missing=f"/metrics has no {PROMPT_TOKENS}/{CACHED_TOKENS} "
                             f"and no {CACHE_HIT_RATE} (SGLang needs --enable-metrics)")
        return CacheHits(cached / prompt if prompt > 0 else None, prompt, cached,
                         f"/metrics Δ{CACHED_TOKENS}/Δ{PROMPT_TOKENS} (tokens)")


def _grown(before: Metrics, after: Metrics, name: str) -> float | None:
    """`delta`, and a counter absent before and present after grew from 0 (SGLang creates its labelled counters at
    their first increment: prompt/generation tokens at the first finished request, verify calls at the first
    speculative one)."""
    if not before.has(name) and after.has(name):
        return after.total(name)
    return delta(before, after, name)


# Quantization methods whose checkpoint config can turn SGLang's `auto` KV dtype into FP8/FP4: the ones whose
# config class reads `kv_cache_quant_algo` (0.5.17: layers/quantization/modelopt_quant.py, nvfp4_online.py, petit.py;
# mem_cache/kv_cache_dtype.py uses it). Any other method (fp8 weights, awq, gptq, ...) leaves auto = the model dtype.
KV_QUANT_METHODS = ("modelopt", "nvfp4", "petit")


def resolve_sglang_kv(raw: str, info: dict) -> tuple[str | None, str]:
    """The KV dtype SGLang's `kv_cache_dtype` means, and how it was resolved (a suffix for the evidence's source).

    `auto` is resolved as SGLang 0.5.17 resolves it (mem_cache/kv_cache_dtype.py `configure_kv_cache_dtype`):
    the model dtype (`/server_info` `dtype`), unless the checkpoint's quant config sets a KV algorithm, which only
    the KV_QUANT_METHODS read; `quantization` null means SGLang was not told of one, and a ModelOpt checkpoint found
    by its config alone would still show in the log's allocation line, the other source. Unresolvable (None) when
    `dtype` is `auto` too, or `quantization` names such a method.

    >>> resolve_sglang_kv("auto", {"dtype": "bfloat16", "quantization": None})
    ('bfloat16', ' (auto = the model dtype: /server_info "dtype": "bfloat16", "quantization": null)')
    >>> resolve_sglang_kv("auto", {"dtype": "bfloat16", "quantization": "modelopt_fp8"})[0] is None
    True
    >>> resolve_sglang_kv("fp8_e5m2", {"dtype": "bfloat16"})
    ('fp8', '')
    """
    value = normalize_dtype(raw)
    if value != "auto":
        return value, ""
    model_dtype, method = normalize_dtype(str(info.get("dtype") or "auto")), info.get("quantization")
    shown = "null" if method is None else f'"{method}"'
    if model_dtype == "auto":
        return None, ' (auto = the model dtype, but /server_info "dtype" is "auto" too: start with --dtype)'
    if method is not None and any(str(method).lower().startswith(m) for m in KV_QUANT_METHODS):
        return None, (f' (auto: not resolvable, "quantization": {shown} may carry an FP8/FP4 KV algorithm in the '
                      "checkpoint: start with --kv-cache-dtype bf16)")
    return model_dtype, (f' (auto = the model dtype: /server_info "dtype": "{info.get("dtype")}", '
                         f'"quantization": {shown})')
