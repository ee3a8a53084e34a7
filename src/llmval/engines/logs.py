"""Evidence from engine startup logs: pure functions over log text, one named regex per line shape.

Formats are from ../shared/reference/engine.md (SGLang 0.5.9/0.5.10/0.5.23, vLLM 0.17.1) and from a real
vLLM 0.32.0 CPU log (selftest/data/engines/). Each parser returns the facts it found with the quoted line,
so a failure can show the evidence; a fact the log does not state is None, never a guess.

    >>> facts = parse_vllm_log("x INFO [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: "
    ...                        "model='m', dtype=torch.bfloat16, kv_cache_dtype=auto, tensor_parallel_size=1, x=y")
    >>> facts.model_dtype, facts.kv_cache_dtype, facts.tensor_parallel_size, facts.version
    ('bfloat16', 'auto', 1, '0.32.0')
"""

from __future__ import annotations

import ast
import collections
import re
from dataclasses import dataclass, field

from ..parsers.envelope import ANSI_RE, unwrap_log

# ---- vLLM ---------------------------------------------------------------------------------------
VLLM_ENGINE_CONFIG_RE = re.compile(r"Initializing a V1 LLM engine \(v(?P<version>[^)]+)\) with config: (?P<config>.*)$",
                                   re.M)
VLLM_CONFIG_DTYPE_RE = re.compile(r"(?:^|, )dtype=(?P<dtype>torch\.\w+)")
VLLM_CONFIG_KV_DTYPE_RE = re.compile(r"(?:^|, )kv_cache_dtype=(?P<kv>[\w.]+)")
VLLM_CONFIG_TP_RE = re.compile(r"(?:^|, )tensor_parallel_size=(?P<tp>\d+)")
VLLM_CONFIG_SERVED_RE = re.compile(r"(?:^|, )served_model_name=(?P<name>[^,]+)")
VLLM_CONFIG_MODEL_RE = re.compile(r"(?:^|, )model='(?P<model>[^']*)'")
VLLM_NON_DEFAULT_ARGS_RE = re.compile(r"non-default args: (?P<args>\{.*\})\s*$", re.M)
VLLM_ATTENTION_BACKEND_RE = re.compile(
    r"^.*Using (?:AttentionBackendEnum\.)?(?P<backend>[A-Z_][A-Z0-9_]*) (?:attention )?backend\b.*$", re.M)
# Ray's worker tags (`(RayWorkerWrapper pid=285, ip=192.168.177.12)`, behind the engine core's own
# `(EngineCore_DP0 pid=1088)`; no `ip=` on the driver's own node) are read by the envelope stage
# (`llmval.parsers.envelope`): each line's tags are facts there, its message is what the regexes here read.
# The multiprocessing executor across nodes (no Ray): `world_size=2, local_world_size=1` on each node's leader.
VLLM_WORLD_SIZE_RE = re.compile(r"^.*\bworld_size=(?P<world>\d+), local_world_size=(?P<local>\d+).*$", re.M)
# An enum's repr inside a printed dict: `<DynamicShapesType.BACKED: 'backed'>`, `<CUDAGraphMode.FULL: (2, 1)>`.
ENUM_REPR_RE = re.compile(r"<(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+): (?P<value>[^<>]*)>")
VLLM_CROSS_NODE_RE = re.compile(r"^.*Custom allreduce is disabled because this process group spans across nodes.*$",
                                re.M)
VLLM_AUTO_TOOL_RE = re.compile(r"^.*\"auto\" tool choice has been enabled.*$", re.M)

# vLLM v1's periodic spec-decode line (vllm/v1/spec_decode/metrics.py `SpecDecodingLogging.log`, every
# --log-stats-interval while the engine decodes, over the interval since the previous one): `SpecDecoding metrics:
# Mean acceptance length: 2.87, Accepted throughput: 35.90 tokens/s, Drafted throughput: 57.60 tokens/s, Accepted:
# 359 tokens, Drafted: 576 tokens, Per-position acceptance rate: 0.792, 0.646, 0.432, Avg Draft acceptance rate:
# 62.3%` (older v1 releases put `Draft acceptance rate: 62.3%` first); each field is read on its own.
VLLM_SPEC_DECODING_RE = re.compile(r"SpecDecoding metrics: (?P<fields>.*)$")
SPEC_MEAN_RE = re.compile(r"Mean acceptance length: (?P<v>[\d.]+)")
SPEC_ACCEPTED_RE = re.compile(r"(?:^|, )Accepted: (?P<v>\d+) tokens")
SPEC_DRAFTED_RE = re.compile(r"(?:^|, )Drafted: (?P<v>\d+) tokens")
SPEC_PER_POSITION_RE = re.compile(r"Per-position acceptance rate: (?P<v>[\d.]+(?:, [\d.]+)*)")


@dataclass(frozen=True)
class SpecDecodingInterval:
    """One `SpecDecoding metrics:` line of vLLM: the acceptance over one logging interval."""

    mean_length: float | None
    accepted: int | None
    drafted: int | None
    per_position: tuple[float, ...]
    quote: str

    @property
    def rate(self) -> float | None:
        return self.accepted / self.drafted if self.accepted is not None and self.drafted else None


def parse_spec_decoding(message: str) -> SpecDecodingInterval | None:
    """The fields of one `SpecDecoding metrics:` message (None when it is no such line).

    >>> parse_spec_decoding("SpecDecoding metrics: Mean acceptance length: 2.87, Accepted throughput: 35.90 tokens/s, "
    ...                     "Drafted throughput: 57.60 tokens/s, Accepted: 359 tokens, Drafted: 576 tokens, "
    ...                     "Per-position acceptance rate: 0.792, 0.646, Avg Draft acceptance rate: 62.3%").per_position
    (0.792, 0.646)
    """
    m = VLLM_SPEC_DECODING_RE.search(message)
    if m is None:
        return None
    fields = m["fields"]

    def first(pattern: re.Pattern, cast):
        found = pattern.search(fields)
        return cast(found["v"]) if found else None

    per_position = first(SPEC_PER_POSITION_RE, lambda v: tuple(float(x) for x in v.split(", "))) or ()
    return SpecDecodingInterval(first(SPEC_MEAN_RE, float), first(SPEC_ACCEPTED_RE, int),
                                first(SPEC_DRAFTED_RE, int), per_position, message.strip()[:400])


# ---- SGLang -------------------------------------------------------------------------------------
SGLANG_KV_DTYPE_RE = re.compile(r"^.*Using KV cache dtype: (?P<dtype>torch\.\w+).*$", re.M)
SGLANG_KV_ALLOC_RE = re.compile(
    r"^.*?(?:(?P<label>\w+) )?KV Cache is allocated\.(?: dtype: (?P<dtype>[\w.]+),)? #tokens: (?P<tokens>\d+), "
    r"(?:K size: (?P<k>[\d.]+) GB, V size: (?P<v>[\d.]+) GB|KV size: (?P<kv>[\d.]+) GB).*$", re.M)
SGLANG_SERVER_ARGS_RE = re.compile(r"server_args=ServerArgs\((?P<args>.*)\)\s*$", re.M)
SGLANG_ARG_RE = re.compile(r"(?P<key>\w+)=(?P<value>'[^']*'|\"[^\"]*\"|[^,()]+)")
SGLANG_ACCEPT_RE = re.compile(r"Decode batch.*?accept len: (?P<len>[\d.]+), accept rate: (?P<rate>[\d.]+)")
SGLANG_CAPACITY_RE = re.compile(r"max_total_num_tokens=(?P<tokens>\d+),.*?context_len=(?P<ctx>\d+)")

# ---- FP8/FP4 KV statements (either engine; quoted as evidence whatever else the sources say) -----------
# vLLM `CacheConfig._validate_cache_dtype`: "Using %s data type to store kv cache. ..." for every quantized KV
# dtype (the literal `fp8` in old releases, the dtype itself since: fp8_e4m3, nvfp4, fp8_ds_mla, ...).
KV_STORE_DTYPE_RE = re.compile(r"^.*Using (?P<dtype>\w+) data type to store kv cache.*$", re.M)
# vLLM's asymmetric K/V cache: "Using asymmetric KV cache dtypes: K=%s, V=%s."
KV_ASYMMETRIC_RE = re.compile(r"^.*Using asymmetric KV cache dtypes: K=(?P<k>\w+), V=(?P<v>\w+).*$", re.M)
# SGLang's (and vLLM v0's) model runner, `load_kv_cache_scales` with an FP8 KV cache and no scales file.
FP8_KV_NO_SCALES_RE = re.compile(r"^.*Using FP8 KV cache but no scaling factors provided.*$", re.M)
# SGLang `configure_kv_cache_dtype` for `--kv-cache-dtype fp4_e2m1` (its own spelling, "a accuracy").
FP4_KV_WARNING_RE = re.compile(r"^.*FP4 \(E2M1\) KV Cache might lead to a accuracy drop.*$", re.M)
# The pool line's dtype, however the rest of the line reads (newer SGLang: `KV Cache is allocated. dtype: X, ...`).
KV_ALLOC_DTYPE_RE = re.compile(r"^.*KV Cache is allocated\. dtype: (?P<dtype>[\w.]+).*$", re.M)
QUANTIZED_KV = ("fp8", "fp4")
"""The KV dtype families the owners reject (any spelling of either normalizes to one of these)."""
FP8_SPELLING_RE = re.compile(r"^(?:mx|nv)?(?:fp8|float8)|^e[45]m[23]|^uint8$")
FP4_SPELLING_RE = re.compile(r"^(?:mx|nv)?(?:fp4|float4)|^e2m1")


def normalize_dtype(value: str | None) -> str | None:
    """One spelling per dtype: bf16/torch.bfloat16 → bfloat16; every FP8 spelling (fp8, fp8_e4m3, fp8_ds_mla,
    torch.float8_e4m3fn, e5m2, SGLang's uint8 store dtype) → fp8; every FP4 one (fp4_e2m1, nvfp4, mxfp4,
    torch.float4_e2m1fn_x2) → fp4.

    >>> [normalize_dtype(v) for v in ("bf16", "torch.bfloat16", "fp8_e5m2", "torch.float8_e4m3fn", "nvfp4", "auto")]
    ['bfloat16', 'bfloat16', 'fp8', 'fp8', 'fp4', 'auto']
    """
    if value is None:
        return None
    v = value.strip().strip("'\"").lower().removeprefix("torch.")
    if v in {"bf16", "bfloat16"}:
        return "bfloat16"
    if v in {"fp16", "float16", "half"}:
        return "float16"
    if v in {"fp32", "float32", "float"}:
        return "float32"
    if FP8_SPELLING_RE.match(v):
        return "fp8"
    if FP4_SPELLING_RE.match(v):
        return "fp4"
    return v


def is_quantized_kv(value: object) -> bool:
    """Whether a KV dtype, in any spelling, is FP8 or FP4 (what `serving.kv_cache.dtype.no_fp8` rejects).

    >>> is_quantized_kv("fp8_e4m3"), is_quantized_kv("NVFP4"), is_quantized_kv("auto"), is_quantized_kv(None)
    (True, True, False, False)
    """
    return isinstance(value, str) and normalize_dtype(value) in QUANTIZED_KV


def _quantized_kv_lines(text: str) -> list[tuple[int, str]]:
    """(offset, line) of every log line that states an FP8/FP4 KV cache, in either engine's wording."""
    found: list[tuple[int, str]] = []
    for pattern in (KV_STORE_DTYPE_RE, SGLANG_KV_DTYPE_RE, KV_ALLOC_DTYPE_RE):
        found += [(m.start(), m.group(0)) for m in pattern.finditer(text) if is_quantized_kv(m["dtype"])]
    found += [(m.start(), m.group(0)) for m in KV_ASYMMETRIC_RE.finditer(text)
              if is_quantized_kv(m["k"]) or is_quantized_kv(m["v"])]
    for pattern in (FP8_KV_NO_SCALES_RE, FP4_KV_WARNING_RE):
        found += [(m.start(), m.group(0)) for m in pattern.finditer(text)]
    return sorted(found)


@dataclass(frozen=True)
class LogLine:
    """A fact found in a log, with the line that states it."""

    value: str
    quote: str


OPENERS, CLOSERS = "([{<", ")]}>"


@dataclass(frozen=True)
class Unparsed:
    """A value of a printed dict that is no Python literal (an object repr): kept as its text."""

    text: str

    def __str__(self) -> str:
        return self.text


def _literal(text: str) -> object:
    """A Python literal, with enum reprs read as their names (`<CUDAGraphMode.FULL: (2, 1)>` → 'CUDAGraphMode.FULL');
    a value that is still no literal stays `Unparsed` text, never None."""
    cleaned = text.strip()
    while (subbed := ENUM_REPR_RE.sub(lambda m: repr(m["name"]), cleaned)) != cleaned:
        cleaned = subbed
    try:
        return ast.literal_eval(cleaned)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if cleaned.startswith("{"):
        try:
            return parse_printed_dict(cleaned)
        except ValueError:
            pass
    return Unparsed(text.strip())


def _split_top_level(body: str) -> list[str] | None:
    """The items of `{a, b, ...}` split at top-level commas (quotes and brackets respected); None if unbalanced."""
    items, depth, quote, start, i = [], 0, "", 1, 1
    if not (body.startswith("{") and body.endswith("}")):
        return None
    while i < len(body) - 1:
        c = body[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in OPENERS:
            depth += 1
        elif c in CLOSERS:
            depth -= 1
            if depth < 0:
                return None
        elif c == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
        i += 1
    if depth or quote:
        return None
    items.append(body[start:-1])
    return [item for item in items if item.strip()]


def parse_printed_dict(text: str) -> dict:
    """A dict as Python prints it, even when some values are object or enum reprs (vLLM's `non-default args`
    with `--compilation-config`): plain values are read exactly, enums by name, other reprs kept `Unparsed`.
    Raises ValueError when the text is not a dict at all (truncated, unbalanced).

    >>> parse_printed_dict("{'port': 8321, 'mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'x': Foo(a=1)}")
    {'port': 8321, 'mode': 'CUDAGraphMode.FULL_AND_PIECEWISE', 'x': Unparsed(text='Foo(a=1)')}
    """
    text = text.strip()
    try:
        whole = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        return whole
    items = _split_top_level(text)
    if items is None:
        raise ValueError(f"not a balanced dict: {text[:120]!r}...")
    parsed: dict = {}
    for item in items:
        key_text, colon, value_text = _split_key(item)
        key = _literal(key_text)
        if not colon or isinstance(key, Unparsed):
            raise ValueError(f"not a `key: value` item: {item.strip()[:120]!r}")
        parsed[key] = _literal(value_text)
    return parsed


def _split_key(item: str) -> tuple[str, str, str]:
    """`'key': value` → ('key', ':', 'value'), the colon being the first one outside quotes."""
    quote = ""
    for i, c in enumerate(item):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == ":":
            return item[:i], ":", item[i + 1:]
    return item, "", ""


@dataclass(frozen=True)
class VllmLogFacts:
    """What a vLLM startup log states."""

    version: str | None = None
    model_dtype: str | None = None
    kv_cache_dtype: str | None = None
    tensor_parallel_size: int | None = None
    tensor_parallel_size_quote: str = ""
    """The line that states it: the engine-config line, else `non-default args` (a log whose config line is cut)."""
    served_model_name: str | None = None
    model_path: str | None = None
    """The engine config's `model='...'`: the weights the engine core loaded."""
    served_model_names: tuple[str, ...] = ()
    """Every alias `--served-model-name a b` gives (`non-default args` lists them all; the engine-config line
    prints the first only)."""
    engine_config_quote: str = ""
    non_default_args: dict = field(default_factory=dict)
    non_default_args_quote: str = ""
    non_default_args_error: str = ""
    """Why the `non-default args` line could not be read as a dict (then no value may be taken as absent)."""
    fp8_kv_quotes: tuple[str, ...] = ()
    attention_backends: tuple[LogLine, ...] = ()
    ray_worker_ips: tuple[str, ...] = ()
    ray_local_worker_quote: str = ""
    """A Ray worker line without `ip=`: a worker on the head's own node."""
    ray_echo_quote: str = ""
    """Remote `ip=`s whose lines carry only head workers' pids (a second raylet on the same machine): not nodes."""
    world_size: int | None = None
    local_world_size: int | None = None
    world_size_quote: str = ""
    cross_node_quote: str = ""
    auto_tool_choice_quote: str = ""
    spec_decoding: tuple[SpecDecodingInterval, ...] = ()
    """Every `SpecDecoding metrics:` line of the current start, oldest first."""

    @property
    def tool_call_parser(self) -> str | None:
        return self.non_default_args.get("tool_call_parser")

    @property
    def reasoning_parser(self) -> str | None:
        return self.non_default_args.get("reasoning_parser")

    @property
    def distributed_executor_backend(self) -> str | None:
        return self.non_default_args.get("distributed_executor_backend")


def _last(pattern: re.Pattern, text: str) -> re.Match | None:
    """The last match: a log that holds several starts (restarts appended) is judged by its latest."""
    found = None
    for found in pattern.finditer(text):  # noqa: B007 - keep the last
        pass
    return found


def parse_vllm_log(text: str) -> VllmLogFacts:
    """Facts from a vLLM API-server log (the latest start in it)."""
    log = unwrap_log(text).since_last(VLLM_NON_DEFAULT_ARGS_RE)
    text = log.text
    facts: dict = {}
    if engine := _last(VLLM_ENGINE_CONFIG_RE, text):
        config = engine["config"]
        facts["version"] = engine["version"]
        facts["engine_config_quote"] = engine.group(0)
        if m := VLLM_CONFIG_DTYPE_RE.search(config):
            facts["model_dtype"] = normalize_dtype(m["dtype"])
        if m := VLLM_CONFIG_KV_DTYPE_RE.search(config):
            facts["kv_cache_dtype"] = m["kv"]
        if m := VLLM_CONFIG_TP_RE.search(config):
            facts["tensor_parallel_size"] = int(m["tp"])
            facts["tensor_parallel_size_quote"] = engine.group(0)[:300]
        if m := VLLM_CONFIG_SERVED_RE.search(config):
            facts["served_model_name"] = m["name"].strip()
        if m := VLLM_CONFIG_MODEL_RE.search(config):
            facts["model_path"] = m["model"]
    if args := _last(VLLM_NON_DEFAULT_ARGS_RE, text):
        facts["non_default_args_quote"] = args.group(0)
        try:
            facts["non_default_args"] = parse_printed_dict(args["args"])
        except ValueError as error:
            facts["non_default_args_error"] = str(error)
    args_dict = facts.get("non_default_args", {})
    if facts.get("tensor_parallel_size") is None and isinstance(tp := args_dict.get("tensor_parallel_size"), int):
        facts["tensor_parallel_size"] = tp
        facts["tensor_parallel_size_quote"] = f"non-default args: 'tensor_parallel_size': {tp}"
    aliases = args_dict.get("served_model_name")
    if isinstance(aliases, str):
        aliases = [aliases]
    if isinstance(aliases, (list, tuple)) and aliases and all(isinstance(a, str) for a in aliases):
        facts["served_model_names"] = tuple(aliases)
        facts.setdefault("served_model_name", aliases[0])
    elif facts.get("served_model_name"):
        facts["served_model_names"] = (facts["served_model_name"],)
    quotes = [line.strip()[:300] for _, line in _quantized_kv_lines(text)]
    if is_quantized_kv(facts.get("kv_cache_dtype")):
        quotes.append(f"engine config (v{facts['version']}): kv_cache_dtype={facts['kv_cache_dtype']}")
    if is_quantized_kv(args_kv := facts.get("non_default_args", {}).get("kv_cache_dtype")):
        quotes.append(f"non-default args: 'kv_cache_dtype': {args_kv!r}")
    facts["fp8_kv_quotes"] = tuple(quotes)
    facts["attention_backends"] = tuple(LogLine(m["backend"], m.group(0).strip())
                                        for m in VLLM_ATTENTION_BACKEND_RE.finditer(text))
    workers = [(line, worker) for line in log.lines if (worker := line.ray_worker) is not None]
    # Two raylets on one machine share its session folder, so the second node's log monitor forwards the head's
    # worker files too, as `ip=<second node>` with the head worker's pid (seen on the lent H200, 2026-12-02): a
    # remote ip whose every pid is also a local worker's is that echo, not a node
    local_pids = {str(w.pid) for _, w in workers if not w.ip}
    remote: dict[str, set[str]] = {}
    for _, w in workers:
        if w.ip:
            remote.setdefault(w.ip, set()).add(str(w.pid))
    facts["ray_worker_ips"] = tuple(sorted(ip for ip, pids in remote.items() if not pids <= local_pids))
    if echoes := sorted(ip for ip, pids in remote.items() if pids <= local_pids):
        facts["ray_echo_quote"] = (f"not counted: {', '.join(echoes)} (lines forwarded with a head worker's pid "
                                   f"{', '.join(sorted(local_pids))}: another raylet's log monitor on the same "
                                   "machine)")
    if local := next((line for line, w in workers if not w.ip), None):
        facts["ray_local_worker_quote"] = local.line.strip()[:300]
    if m := _last(VLLM_WORLD_SIZE_RE, text):
        facts["world_size"], facts["local_world_size"] = int(m["world"]), int(m["local"])
        facts["world_size_quote"] = m.group(0).strip()[:300]
    if m := VLLM_CROSS_NODE_RE.search(text):
        facts["cross_node_quote"] = m.group(0).strip()
    if m := VLLM_AUTO_TOOL_RE.search(text):
        facts["auto_tool_choice_quote"] = m.group(0).strip()
    facts["spec_decoding"] = tuple(i for line in log.lines if "SpecDecoding" in line.message
                                   and (i := parse_spec_decoding(line.message)) is not None)
    return VllmLogFacts(**facts)


@dataclass(frozen=True)
class KvAllocation:
    """One `KV Cache is allocated` line of SGLang."""

    label: str
    dtype: str | None
    tokens: int
    k_gb: float | None
    v_gb: float | None
    kv_gb: float | None
    quote: str


@dataclass(frozen=True)
class SglangLogFacts:
    """What an SGLang startup log states."""

    kv_dtypes: tuple[LogLine, ...] = ()
    kv_allocations: tuple[KvAllocation, ...] = ()
    server_args: dict = field(default_factory=dict)
    server_args_quote: str = ""
    accept_lengths: tuple[float, ...] = ()
    accept_quote: str = ""
    """The latest `Decode batch. ... accept len: ...` line (what the acceptance read from the log quotes)."""
    context_len: int | None = None
    fp8_kv_quotes: tuple[str, ...] = ()


def _arg_value(raw: str) -> object:
    raw = raw.strip()
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw


def parse_sglang_log(text: str) -> SglangLogFacts:
    """Facts from an SGLang server log (the latest start in it)."""
    text = unwrap_log(text).since_last(SGLANG_SERVER_ARGS_RE).text
    facts: dict = {}
    facts["kv_dtypes"] = tuple(LogLine(normalize_dtype(m["dtype"]) or "", m.group(0).strip())
                               for m in SGLANG_KV_DTYPE_RE.finditer(text))
    facts["kv_allocations"] = tuple(
        KvAllocation(m["label"] or "", normalize_dtype(m["dtype"]), int(m["tokens"]),
                     float(m["k"]) if m["k"] else None, float(m["v"]) if m["v"] else None,
                     float(m["kv"]) if m["kv"] else None, m.group(0).strip())
        for m in SGLANG_KV_ALLOC_RE.finditer(text))
    if args := _last(SGLANG_SERVER_ARGS_RE, text):
        facts["server_args"] = {m["key"]: _arg_value(m["value"]) for m in SGLANG_ARG_RE.finditer(args["args"])}
        facts["server_args_quote"] = args.group(0)[:400]
    accepts = list(SGLANG_ACCEPT_RE.finditer(text))
    facts["accept_lengths"] = tuple(float(m["len"]) for m in accepts)
    if accepts:
        start = text.rfind("\n", 0, accepts[-1].start()) + 1
        end = text.find("\n", accepts[-1].start())
        facts["accept_quote"] = text[start:end if end >= 0 else len(text)].strip()[:400]
    if m := _last(SGLANG_CAPACITY_RE, text):
        facts["context_len"] = int(m["ctx"])
    quotes = [line.strip()[:300] for _, line in _quantized_kv_lines(text)]
    if is_quantized_kv(args_kv := facts.get("server_args", {}).get("kv_cache_dtype")):
        quotes.append(f"server_args=ServerArgs(... kv_cache_dtype={args_kv!r} ...)")
    facts["fp8_kv_quotes"] = tuple(quotes)
    return SglangLogFacts(**facts)


# ---- an engine's last words (either engine; read when its server does not answer) ------------------------------
# vLLM's record prefix `(APIServer pid=433) ERROR 05-04 08:51:40 [core_client.py:604] `, SGLang's
# `[2025-08-01 10:00:00 TP0] `: what is left is the statement.
LOG_RECORD_PREFIX_RE = re.compile(r"^(?:\([\w.]+ pid=\d+\) )*(?:[A-Z]+ \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
                                  r"\[[^\]]*\] |\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] )?")
TRACEBACK_NOISE_RE = re.compile(r"^(?:Traceback \(most recent call last\):|\s+File \".*|\s+\S.*|[\s^~]*)$")
"""A traceback's header, its frames (`  File "...", line N, in f`), their code lines (indented) and the `^^^^`
markers under them: the statement that matters is the exception line that ends it."""


def last_error_statements(text: str, limit: int = 3) -> list[str]:
    """The last `limit` distinct statements of failure among a log's error lines (its traceback frames dropped),
    each line as the engine wrote it, oldest first.

    >>> prefix = "(APIServer pid=9) ERROR 12-01 13:40:02 [async_llm.py:480] "
    >>> last_error_statements("\\n".join(prefix + line for line in (
    ...     "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
    ...     "Traceback (most recent call last):", '  File "/x/core_client.py", line 846, in get_output_async',
    ...     "    raise self._format_exception(outputs) from None", "              ^^^^^^^^^^^^",
    ...     "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."))) == [
    ...     prefix + "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
    ...     prefix + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."]
    True
    """
    found: dict[str, str] = {}
    for line in unwrap_log(text).quotable.splitlines():
        if START_MARKER_RE.search(line):  # a start is never a failure (SGLang's holds `custom_sigquit_handler`)
            found.clear()
            continue
        statement = LOG_RECORD_PREFIX_RE.sub("", line, count=1)
        if not statement.strip() or TRACEBACK_NOISE_RE.match(statement):
            continue
        found.pop(statement, None)  # the latest occurrence counts
        found[statement] = line.rstrip()
    return list(found.values())[-limit:]


# ---- an engine's death: each adapter's `death_lines` names its own and torch's ------------------------------------
# Each is a plain extended regex that grep -E (the host-side read, `logsource.ERROR_LINES`) and Python read alike.
TORCH_DEATH_LINES = ("CUDA error: out of memory", "CUDA out of memory", "OutOfMemoryError", "CUDA error: ")
"""torch's: `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...`, `RuntimeError: CUDA error: out of
memory` (and any other `CUDA error: ...`, an illegal memory access or an ECC error)."""
VLLM_DEATH_LINES = ("EngineDeadError", "engine core exited unexpectedly", "died unexpectedly", "ActorDiedError",
                    "RayActorError")
"""vLLM's: `vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue`, `[shutdown] MPClient: engine
core exited unexpectedly; starting cleanup` (a WARNING: the engine core died by a signal, no traceback), `Engine core
proc EngineCore_DP0 died unexpectedly`, `RayWorkerProc rank=[0] died unexpectedly` (its Ray executor, seen on the lent
H200), Ray's own actor errors."""
SGLANG_DEATH_LINES = ("crashed with exit code", "SIGQUIT received", "Received sigquit from a child",
                      "[Ww]atchdog timeout [(]self[.]watchdog_timeout=")
"""SGLang's (its logger writes no level name): `Subprocess scheduler_0 (pid=3519) crashed with exit code -15.
Triggering SIGQUIT for cleanup...` then `SIGQUIT received. signum=None, frame=None. It usually means one child
failed.` (REAL: the lent H200, SGLang 0.5.17), `Received sigquit from a child process. It usually means the child
failed.` (during launch), `Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)` (a hung
scheduler, killed by its watchdog)."""
DEATH_LINES = (*TORCH_DEATH_LINES, *VLLM_DEATH_LINES, *SGLANG_DEATH_LINES)
"""Every engine's death lines: what the host-side error read keeps (`logsource.ERROR_LINES`)."""
DEATH_RE = re.compile("|".join(DEATH_LINES))
START_MARKER_RE = re.compile(r"non-default args: \{|server_args=ServerArgs\(|Initializing a V1 LLM engine")
"""Where an engine start begins. Never error evidence: SGLang's `server_args=ServerArgs(...)` holds
`custom_sigquit_handler=None`, which an error read for `sigquit` took for a death."""
LOG_TIME_RE = re.compile(r"^(?:\([\w.]+ pid=\d+\) )*(?:\[(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)"
                         r"|[A-Z]+ (?P<md>\d\d-\d\d) (?P<vtime>\d\d:\d\d:\d\d))")
"""A log record's time: SGLang's `[2026-12-02 00:29:37]`, vLLM's `(APIServer pid=9) ERROR 12-01 13:40:02`."""
NOT_AN_ERROR_RE = re.compile(r"^(?:\([\w.]+ pid=\d+\) )*(?:DEBUG|INFO|WARNING|WARN) \d\d-\d\d ")
"""A record whose own level says it is no error (vLLM's startup `WARNING ... Found ulimit of 20000 and failed to
automatically increase`, which the error read keeps for its `OSError:`): quoted only when it is a death line."""
NEAR_S = 60.0
"""How long before a death an error may have been written to be quoted with it: a /tokenize traceback 80 s older
than the death, or a startup WARNING 5 minutes older, says nothing of why it died."""


def log_time(line: str) -> tuple[str, float | None]:
    """(the time a log record says it was written, as written; seconds to compare within one log), or ("", None).

    >>> log_time("[2026-12-02 00:29:37] SIGQUIT received.")[0]
    '2026-12-02 00:29:37'
    >>> log_time("(APIServer pid=9) ERROR 12-01 13:40:02 [x.py:1] boom")[0]
    '12-01 13:40:02'
    """
    import calendar
    import time

    found = LOG_TIME_RE.match(ANSI_RE.sub("", line))
    if found is None:
        return "", None
    if found["date"]:
        shown, parsed = f"{found['date']} {found['time']}", time.strptime(f"{found['date']} {found['time']}",
                                                                          "%Y-%m-%d %H:%M:%S")
    else:  # vLLM writes no year: any one year orders the records of one log
        shown = f"{found['md']} {found['vtime']}"
        try:
            parsed = time.strptime(f"2000-{shown}", "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return shown, None
    return shown, float(calendar.timegm(parsed))


@dataclass(frozen=True)
class DeathEvidence:
    """What an engine's log says of its end, from its current start only: the line that says it died (the first of
    the last run of death lines) with its time, and the error statements written close to it."""

    death: str = ""
    """The line that says what died, as written ("" when no line of `death_lines` is there)."""
    at: str = ""
    """Its time as the log writes it (of the last error statement when no line says what died)."""
    last: str = ""
    """The last error statement (traceback frames dropped)."""
    near: tuple[str, ...] = ()
    """Other error statements written within NEAR_S of the death (or of the last statement), oldest first."""


def death_evidence(text: str, death_lines: tuple[str, ...] = DEATH_LINES, *, limit: int = 3,
                   near_s: float = NEAR_S) -> DeathEvidence:
    """The end of an engine in its own words, from the error lines of its current start (`text`: what the error
    read selected). Startup lines are never evidence; a statement older than `near_s` before the death (or before
    the last statement) is not quoted; a line without a time (a traceback's) takes the time of the record before it.

    >>> log = "\\n".join(["[2026-12-02 00:28:00] TypeError: Integer exceeds 64-bit range",
    ...                  "[2026-12-02 00:29:37] Subprocess scheduler_0 (pid=971) crashed with exit code -9. "
    ...                  "Triggering SIGQUIT for cleanup...",
    ...                  "[2026-12-02 00:29:37] SIGQUIT received. signum=None, frame=None. It usually means one child "
    ...                  "failed."])
    >>> found = death_evidence(log, SGLANG_DEATH_LINES)
    >>> found.death[22:80], found.at, [line[22:38] for line in found.near]  # not the TypeError 97 s before
    ('Subprocess scheduler_0 (pid=971) crashed with exit code -9', '2026-12-02 00:29:37', ['SIGQUIT received'])
    """
    death_re = re.compile("|".join(death_lines)) if death_lines else None
    lines = [line.rstrip() for line in unwrap_log(text).quotable.splitlines()]  # journald, docker, Ray: off
    starts = [n for n, line in enumerate(lines) if START_MARKER_RE.search(line)]
    lines = lines[starts[-1] + 1:] if starts else lines
    records: list[tuple[str, str, str, float | None]] = []  # (line, statement, shown time, seconds)
    shown, seconds = "", None
    for line in lines:
        when, at = log_time(line)
        if when:
            shown, seconds = when, at
        statement = LOG_RECORD_PREFIX_RE.sub("", line, count=1)
        if statement.strip() and not TRACEBACK_NOISE_RE.match(statement):
            records.append((line, statement, shown, seconds))
    if not records:
        return DeathEvidence()
    deaths = [n for n, record in enumerate(records) if death_re is not None and death_re.search(record[0])]
    records_kept = [r for n, r in enumerate(records) if n in deaths or not NOT_AN_ERROR_RE.match(r[0])]
    if deaths:
        # the first death line written close to the last one: what died, before the cleanup that followed it
        first = min(n for n in deaths if _close(records[n][3], records[deaths[-1]][3], near_s))
        anchor, death = records[first], records[first][0]
    else:
        if not records_kept:
            return DeathEvidence()
        anchor, death = records_kept[-1], ""
    records = records_kept
    latest: dict[str, str] = {}
    for line, statement, _, when in records:
        if line != death and line != anchor[0] and _close(when, anchor[3], near_s):
            latest.pop(statement, None)
            latest[statement] = line
    near = tuple(latest.values())[-(limit - 1):] if limit > 1 else ()
    return DeathEvidence(death=death, at=anchor[2], last=records[-1][0], near=near)


def _close(when: float | None, anchor: float | None, near_s: float) -> bool:
    """Written within `near_s` before `anchor` (or after it); a record of no known time is close."""
    return when is None or anchor is None or when >= anchor - near_s


def first_death_statement(text: str) -> str:
    """The first line of the current start that says what died (`DEATH_RE`), as the engine wrote it; "" if none.

    >>> line = "(EngineCore pid=7350) ERROR 12-02 05:16:48 [ray_executor_v2.py:489] RayWorkerProc rank=[0] died"
    >>> first_death_statement(line + " unexpectedly, shutting down executor.\\nRuntimeError: Executor failed.")[68:]
    'RayWorkerProc rank=[0] died unexpectedly, shutting down executor.'
    """
    for line in unwrap_log(text).quotable.splitlines():
        if DEATH_RE.search(line) and not START_MARKER_RE.search(line):
            return line.rstrip()
    return ""


PLACEMENT_STALL_LINES = ("Cannot provide a placement group", "Waiting for creating a placement group",
                         "number of required GPUs exceeds", "is bigger than a reserved number of",
                         "don't have enough GPUs available", "No current placement group found")
"""vLLM under Ray asking Ray for its GPUs (vllm/v1/executor/ray_utils.py), each a plain extended regex that the
host-side read (`logsource.STALL_LINES`, kept in the error read's window) and Python read alike. Their order is
the host command's text, on which the recorded Ray replays are keyed: a new line goes last, and into
PLACEMENT_STALL_RANK too (a self-test keeps the two sets equal)."""
PLACEMENT_STALL_RE = re.compile("|".join(PLACEMENT_STALL_LINES))
PLACEMENT_STALL_RANK = ("Cannot provide a placement group", "number of required GPUs exceeds",
                        "don't have enough GPUs available", "Waiting for creating a placement group",
                        "is bigger than a reserved number of", "No current placement group found")
"""The same lines by which names the cause best: Ray's refusal first, the wait next, the spread warning, the
request last."""
PLACEMENT_WAIT = "it waits for GPUs Ray does not give (its placement group)"
"""How every page names a `placement_group_stall` line as the cause (the endpoint's evidence, `--wait-ready`)."""


def placement_group_stall(text: str) -> str:
    """The placement-group line that best says why a vLLM under Ray did not come up (its record prefix kept), or ""
    when the log holds none: the latest of the most telling kind (`PLACEMENT_STALL_RANK`).

    >>> placement_group_stall("(EngineCore_DP0 pid=7) INFO 12-06 10:00:00 [ray_utils.py:378] No current placement "
    ...                       "group found. Creating a new placement group.\\n(EngineCore_DP0 pid=7) INFO 12-06 "
    ...                       "10:00:10 [ray_utils.py:212] Waiting for creating a placement group of specs for 10 "
    ...                       "seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}].").split("] ", 1)[1]
    "Waiting for creating a placement group of specs for 10 seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]."
    """
    lines = [line.line.strip() for line in unwrap_log(text).lines if PLACEMENT_STALL_RE.search(line.message)]
    for kind in PLACEMENT_STALL_RANK:
        if found := [line for line in lines if kind in line]:
            return found[-1][:400]
    return ""


def lines_since(before: str, after: str) -> str:
    """The lines of the read `after` that the earlier read `before` did not hold (each line counted once: a line is
    the same line when its text, time included, is): what the engine logged between the two reads.

    >>> lines_since("a 10:00\\nb 10:10\\n", "b 10:10\\nc 10:20\\nd 10:30\\n")
    'c 10:20\\nd 10:30\\n'
    """
    seen = collections.Counter(before.splitlines())
    new = []
    for line in after.splitlines():
        if seen[line] > 0:
            seen[line] -= 1
        else:
            new.append(line + "\n")
    return "".join(new)


def without_placement_lines(text: str) -> str:
    """The error read's lines less its placement-group lines: a wait for GPUs is named as the cause
    (`placement_group_stall`), never quoted as the engine's last error (the one read keeps both).

    >>> without_placement_lines("INFO 12-06 10:00:00 [ray_utils.py:378] No current placement group found.\\nERROR x")
    'ERROR x'
    """
    return "".join(line for line in text.splitlines(keepends=True) if not PLACEMENT_STALL_RE.search(line))
