"""The adapter base: one endpoint's facts, each read lazily from the engine's own interfaces.

An adapter never judges; it returns `Fact`s (value, where it came from, the quoted evidence) and the
contract tests compare them with the inventory. What an engine does not expose raises `NotExposed`
(the suite cannot check it), never a guess. Every HTTP call goes through `request`, which turns
httpx errors into `EndpointError` naming the endpoint and URL and, once the endpoint has stopped
answering (a timeout or a refused connection, confirmed by one short /health probe), answers every
later call at once with the first cause, so a dead or hung server ends the run within its timeouts. A
generation request that times out while /health still answers (an engine hung behind a live API server: vLLM
with its EngineCore stopped) marks the engine hung: later generation requests are not sent, one timeout in all.
Before the first other request of a run, one /health probe with the endpoint's short `health_timeout_s`
runs, so a server that accepts and never answers is named within seconds, not after `request_timeout_s`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from ..core.contract import excerpt, shorten
from ..core.errors import (
    EndpointError,
    EndpointProtocolError,
    EndpointTimeout,
    LlmvalError,
    ReplayMiss,
    TokenizeFailed,
)
from ..inventory import EndpointSpec
from ..io.answers import ChatCompletion, ModelList, checked, parse_json
from ..io.http import httpx_errors, json_of
from ..io.sse import data_events, not_event_stream
from .identity import ModelEvidence
from .logs import (
    PLACEMENT_WAIT,
    TORCH_DEATH_LINES,
    death_evidence,
    last_error_statements,
    normalize_dtype,
    placement_group_stall,
    without_placement_lines,
)
from .metrics import Metrics, parse_metrics
from .ranges import ImpossibleMetric, accept_length_ceiling, out_of_range, outside_ranges
from .stream import StreamedChat, join_chat_stream


class ModelNotServed(EndpointError):
    """A request named the inventory's model and the endpoint answered that no such model is served."""

    depends_on = ("serving.model.id",)


class NotExposed(LlmvalError):
    """The engine does not expose a fact the inventory asks about (the message says how to expose it)."""


@dataclass(frozen=True)
class Fact:
    """One observed fact and its provenance."""

    value: Any
    source: str
    """Where it was read: `/server_info internal_states[0].kv_cache_dtype`, `log: non-default args`, ..."""
    quote: str = ""

    def __str__(self) -> str:
        return f"{self.value!r} ({self.source})"


@dataclass(frozen=True)
class KvEvidence:
    """One independent source's word on the KV cache dtype."""

    source: str
    raw: str
    """As the source states it (`auto`, `bf16`, `torch.bfloat16`)."""
    resolved: str | None
    """The dtype it means (`auto` resolved with the model dtype where known); None when it cannot be resolved."""
    quote: str = ""


@dataclass(frozen=True)
class LoadCounters:
    """The `/metrics` names a perf window reads: tokens generated, requests finished, running and waiting
    (None: the engine exposes no such metric, so that part of the window is not countable)."""

    generation_tokens: str | None = None
    finished_requests: str | None = None
    running: str | None = None
    waiting: str | None = None


@dataclass(frozen=True)
class SampledMetrics:
    """The `/metrics` names sampled through every perf window (None: the engine exposes no such metric).

    Gauges are read as they are at each sample; counters are read as their growth since the window opened."""

    waiting: str | None = None
    """Gauge: requests queued, not yet scheduled."""
    running: str | None = None
    """Gauge: requests being scheduled (prefill or decode)."""
    kv_cache_usage: str | None = None
    """Gauge: the share of KV-cache blocks (or token slots) in use, 0..1."""
    preemptions: str | None = None
    """Counter: requests preempted (their KV freed, recomputed later)."""
    retracted: str | None = None
    """Gauge: requests retracted by the scheduler (SGLang's preemption) since its previous stats log (SGLang 0.5.9 to
    0.5.23 reset it to 0 after each log, so a retraction between two samples can be missed)."""
    prefix_cache_queries: str | None = None
    """Counter: prompt tokens looked up in the prefix cache."""
    prefix_cache_hits: str | None = None
    """Counter: prompt tokens found in the prefix cache."""
    prefix_cache_hit_rate: str | None = None
    """Gauge: the engine's own hit rate (SGLang: of its latest prefill batches, at the latest prefill stats log;
    0.5.9 and 0.5.10.post1 set it to 0 at every decode stats log)."""
    spec_accept_length: str | None = None
    """Gauge: speculative acceptance length as the engine reports it now (vLLM's is computed from counters:
    `acceptance`)."""
    spec_drafts: str | None = None
    """Counter: speculative draft rounds (vLLM; with `spec_accepted_tokens`: acceptance length 1 + accepted/drafts
    through the window, as `acceptance` computes it over the whole window)."""
    spec_accepted_tokens: str | None = None
    """Counter: draft tokens the target model accepted."""

    def gauges(self) -> dict[str, str]:
        """key -> metric name of every gauge the engine names."""
        return {k: v for k in GAUGE_KEYS if (v := getattr(self, k)) is not None}

    def counters(self) -> dict[str, str]:
        """key -> metric name of every counter the engine names."""
        return {k: v for k in COUNTER_KEYS if (v := getattr(self, k)) is not None}


GAUGE_KEYS = ("waiting", "running", "kv_cache_usage", "retracted", "prefix_cache_hit_rate", "spec_accept_length")
COUNTER_KEYS = ("preemptions", "prefix_cache_queries", "prefix_cache_hits", "spec_drafts", "spec_accepted_tokens")
OPTIONAL_KEYS = ("spec_accept_length", "spec_drafts", "spec_accepted_tokens")
"""Metrics an engine registers only when speculative decoding is configured: absent is not missing."""
GAUGE_RANGES = {"waiting": "gauge_count", "running": "gauge_count", "kv_cache_usage": "kv_cache_usage",
                "retracted": "gauge_count", "prefix_cache_hit_rate": "prefix_cache_hit_rate",
                "spec_accept_length": "spec_accept_length_gauge"}
"""Each gauge's line of the physical-range table (`llmval.engines.ranges.RANGES`); every counter's growth is
`counter_growth` (a counter only grows)."""
MEAN_KEYS = ("kv_cache_usage", "prefix_cache_hit_rate", "spec_accept_length")
"""Gauges that are a share or a length per engine (or per scheduler rank): several label sets (data-parallel
engines) are averaged, never summed; request counts and counters are summed over label sets."""


@dataclass(frozen=True)
class CacheHits:
    """Prefix-cache hits over the traffic between two `/metrics` scrapes (one computation per engine)."""

    rate: float | None
    """Hit tokens / queried tokens over the window; None when nothing was queried or it is not countable."""
    queried_tokens: float | None
    hit_tokens: float | None
    source: str
    missing: str = ""
    """Non-empty when the engine exposes no prefix-cache counters: what is missing and how to expose it."""
    impossible: str = ""
    """Non-empty when the figures are outside their physical range (`llmval.engines.ranges`): the rate is then no
    measurement (set by the record itself, whichever engine computed it)."""

    def __post_init__(self) -> None:
        counted = (f"{self.hit_tokens:g} of {self.queried_tokens:g} tokens"
                   if self.hit_tokens is not None and self.queried_tokens is not None else self.source)
        why = outside_ranges([("prefix_cache_hit_rate", self.rate, counted),
                              ("counter_growth", self.queried_tokens, f"prompt tokens looked up, {self.source}"),
                              ("counter_growth", self.hit_tokens, f"hit tokens, {self.source}")])
        if not why and self.hit_tokens is not None and self.queried_tokens is not None \
                and self.hit_tokens > self.queried_tokens:
            why = out_of_range("prefix_cache_hit_rate", math.inf, values=counted)
        object.__setattr__(self, "impossible", self.impossible or why)


@dataclass(frozen=True)
class Acceptance:
    """Speculative acceptance over the traffic between two `/metrics` scrapes (one computation per engine,
    used by the serving check and by every perf window)."""

    length: float | None
    """Mean tokens per verify step (1 + accepted per draft); None when the drafter never ran in the window."""
    rate: float | None
    """Accepted / proposed draft tokens, where the engine counts proposals; else None."""
    source: str
    quote: str = ""
    missing: str = ""
    """Non-empty when the engine exposes no acceptance counters: what is missing and how to expose it."""
    impossible: str = ""
    """Non-empty when the length or rate is outside its physical range, or a counter it was computed from dropped
    (`llmval.engines.ranges`; the length's ceiling, 1 + draft tokens, is the deployment's: `within`)."""
    growth: tuple[tuple[str, float | None], ...] = ()
    """(counter name, its growth over the window) of each counter the figures were computed from."""

    def __post_init__(self) -> None:
        why = outside_ranges([("counter_growth", grown, f"{name} over the window") for name, grown in self.growth]
                             + [("spec_accept_length", self.length, self.quote or self.source),
                                ("spec_acceptance_rate", self.rate, self.quote or self.source)])
        object.__setattr__(self, "impossible", self.impossible or why)

    def within(self, ceiling: float | None) -> Acceptance:
        """This acceptance, its length also bounded by `ceiling` (`ranges.accept_length_ceiling`: 1 + the draft
        tokens a step verifies); `impossible` says so when it is above."""
        why = out_of_range("spec_accept_length", self.length, high=ceiling,
                           values=f"{self.quote or self.source}; at most {ceiling:g} with the deployment's draft tokens"
                           if ceiling is not None else self.quote or self.source)
        return self if self.impossible or not why else dataclasses.replace(self, impossible=why)


GENERATION_PATHS = ("/v1/chat/completions", "/v1/completions", "/generate")
"""Paths that make the engine generate: the ones a hung engine (its API server still answering) never answers."""


def is_generation(path: str) -> bool:
    """Whether `path` (`/v1/chat/completions (stream)` included) asks the engine to generate."""
    return path.split(" ", 1)[0] in GENERATION_PATHS


DEAD_HINT = ("the engine stopped answering during the run (crashed, killed, or its port closed): read its log for "
             "how it died (journalctl -u / docker logs / its log file), restart it, and run again")
SERVER_ERROR_CHECK = "serving.generation.tokens"
"""The check that judges an engine answering a plain generation with HTTP 5xx as a broken contract
(tests/serving/test_health.py). An endpoint found dead after such an answer died of the fault that answer showed
(vLLM's `EngineCore encountered an issue`, then its exit): one fault, so the checks its death stops depend on it."""
HUNG_HINT = ("the API server answers but its engine does not generate: the engine process stopped (`ps -o stat` "
             "shows T) or stuck; read the engine log; or request_timeout_s is too short for this model")


@dataclass
class EndpointState:
    """Whether the endpoint still answers; shared by every adapter of one endpoint in a run."""

    dead_reason: str | None = None
    probed: bool = False
    """The first /health probe of the run was made (by health() itself or before another request)."""
    hung_reason: str | None = None
    """The first generation request that timed out while /health still answered (vLLM's API server answers /health
    200 while its EngineCore is stopped): later generation requests are not sent (issue 31.3)."""
    server_error: str | None = None
    """The first generation request answered with HTTP 5xx (`POST /v1/chat/completions: HTTP 500`): a death found
    after it is the same fault (`EngineAdapter.dead_depends_on`)."""


class EngineAdapter:
    """Facts of one endpoint. Subclasses: SglangAdapter, VllmAdapter; this base is the plain OpenAI server.

    Class-level knowledge (usable without an endpoint, e.g. by `llmval.load` and `llmval.needle`):
    `kind`, `has_version`, `has_health`, `load_counters`, `acceptance`, `identity_info_paths`/`identity_extras`,
    `tokenize_form`, `thinking_off`, `honours_ignore_eos` and `abort_hint`.
    """

    kind: ClassVar[str] = "openai"
    """The inventory's `engine =` value (the registry `llmval.engines.ADAPTERS` is keyed by it: the inventory's
    choices, `llmval init --engine` and its templates derive from it)."""
    default_port: ClassVar[int] = 8000
    """The port the engine's server listens on unless told otherwise (`llmval init` writes it)."""
    has_version: ClassVar[bool] = False
    """Whether the engine reports its version (`version` raises NotExposed otherwise)."""
    has_health: ClassVar[bool] = False
    """Whether GET /health exists (a plain OpenAI-compatible server may answer 404 and still be up)."""
    load_counters: ClassVar[LoadCounters] = LoadCounters()
    sampled_metrics: ClassVar[SampledMetrics] = SampledMetrics()
    """The `/metrics` names sampled through every perf window (queue, KV usage, preemptions, prefix cache)."""
    read_metrics: ClassVar[frozenset[str]] = frozenset()
    """The other `/metrics` families the adapter reads (cache config, speculative counters): with the load counters
    and the sampled names, `metric_families()`, the only lines of a scrape ever parsed."""
    tokenize_form: ClassVar[str | None] = None
    """How `POST /tokenize` counts a chat prompt: "chat" (takes `messages`, applies the chat template),
    "prompt" (takes a prompt only; the template's overhead is measured separately) or None (no /tokenize)."""
    thinking_off: ClassVar[dict] = {}
    """Extra chat-request fields that turn a reasoning model's thinking off."""
    honours_ignore_eos: ClassVar[bool] = False
    """Whether the server honours `ignore_eos` (every request then generates exactly `max_tokens`)."""
    identity_info_paths: ClassVar[tuple[str, ...]] = ()
    """GET paths (first that answers 200) whose JSON `identity_extras` reads into a perf server identity."""
    abort_hint: ClassVar[str] = (
        "the engine answered finish_reason \"abort\": it stopped the generation itself; read the server log at the "
        "request's time for the reason it gives")
    """What an answer's finish_reason "abort" means on this engine and where its owner looks (tool-call verdicts)."""
    speculative_algorithms: ClassVar[frozenset[str] | None] = None
    """The speculative algorithms the engine reports (`speculative()["algorithm"]`, what an inventory declares as
    `expect.speculative.algorithm`); None: not known, any name is taken."""
    speculative_reported_as: ClassVar[dict[str, str]] = {}
    """A name the engine takes at launch but reports as another (SGLang: NEXTN is reported as EAGLE)."""

    @classmethod
    def reports_speculative_algorithm(cls, algorithm: str) -> bool:
        """Whether this engine can report `algorithm` (`speculative_algorithms`; every name where not known)."""
        return cls.speculative_algorithms is None or algorithm in cls.speculative_algorithms

    @classmethod
    def speculative_algorithm_problem(cls, algorithm: str) -> str | None:
        """Why an inventory's `expect.speculative.algorithm` can never be what this engine reports, else None (the
        inventory refuses it at load: the check would fail on every healthy server)."""
        if cls.reports_speculative_algorithm(algorithm):
            return None
        if (reported := cls.speculative_reported_as.get(algorithm)) is not None:
            return f"{cls.kind} reports {algorithm} as {reported}: declare {reported!r}"
        known = sorted(cls.speculative_algorithms or ())
        near = [name for name in known if name.lower() == algorithm.lower()]
        meant = f"; did you mean {near[0]!r}?" if near else ""
        return f"{cls.kind} has no speculative algorithm {algorithm!r}{meant} ({cls.kind} reports one of {known})"

    def __init__(self, spec: EndpointSpec, client: httpx.Client, *, read_log: Callable[[], str] | None = None,
                 state: EndpointState | None = None, read_log_errors: Callable[[], str] | None = None):
        self.spec = spec
        self.client = client
        self._read_log = read_log
        self._read_log_errors = read_log_errors
        self.state = state or EndpointState()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.name!r})"

    # ---- HTTP, bounded -----------------------------------------------------------------------
    def _fail(self, path: str, error: EndpointError) -> EndpointError:
        """`error` (translated at `llmval.io.http.httpx_errors`, saying method, URL and what happened) named for this
        endpoint; the endpoint is marked dead when a short /health probe fails too."""
        reason = str(error)
        if self.state.dead_reason is None and self._confirm_dead(path):
            self.state.dead_reason = reason
        elif isinstance(error, EndpointTimeout) and is_generation(path) and self.state.hung_reason is None:
            self.state.hung_reason = reason
        failed = type(error)(f"[{self.spec.name}] {reason}", kind=error.kind, detail=error.detail)
        if self.state.hung_reason == reason:
            failed.reason, failed.hint = self._hung_cause(), HUNG_HINT  # it and every request not sent: one cause
        elif self.state.dead_reason == reason:
            failed.reason, failed.hint = self._dead_cause(), DEAD_HINT  # the same: one fault, one root cause
            failed.depends_on = self.dead_depends_on()
        return failed

    def _dead_cause(self) -> str:
        after = (f" after a generation request answered {self.state.server_error}"
                 if self.state.server_error is not None else "")
        return (f"[{self.spec.name}] the endpoint stopped answering during the run{after} ({self.state.dead_reason}); "
                f"later requests to it are not sent")

    def dead_depends_on(self) -> tuple[str, ...]:
        """What the checks a dead endpoint stops depend on: the generation that answered HTTP 5xx before the death
        (`SERVER_ERROR_CHECK` on this endpoint), which showed the same fault first; nothing when none did."""
        return (f"{SERVER_ERROR_CHECK}@{self.spec.name}",) if self.state.server_error is not None else ()

    def _note_server_error(self, method: str, path: str, status: int) -> None:
        if status >= 500 and is_generation(path) and self.state.server_error is None:
            self.state.server_error = f"{method} {path.split(' ', 1)[0]}: HTTP {status}"

    def _hung_cause(self) -> str:
        return (f"[{self.spec.name}] the engine is hung: a generation request got no answer while GET /health still "
                f"answers ({self.state.hung_reason}); later generation requests of this endpoint are not sent")

    def _confirm_dead(self, failed_path: str) -> bool:
        if failed_path == "/health":
            return True
        try:
            with httpx_errors():
                self.client.get("/health", timeout=self.spec.health_timeout_s)
        except EndpointError:
            return True
        return False

    def _probe_first(self, path: str) -> None:
        """Once per run, before the first request that is not itself /health: a short /health probe; a
        server that does not answer it is dead for the rest of the run (every later call fails at once)."""
        if self.state.probed or path == "/health":
            return
        self.state.probed = True
        try:
            with httpx_errors(f"GET {self.client.base_url}/health", timeout_s=self.spec.health_timeout_s):
                self.client.get("/health", timeout=self.spec.health_timeout_s)
        except EndpointTimeout as error:
            self.state.dead_reason = str(error)
        except EndpointError:
            return  # a refused or reset connection: the request itself will say so
        except ReplayMiss:
            return  # a recording made without the probe: the replayed request answers for itself
        except Exception:  # the probe only names a hang; anything else, the request itself says
            return

    def _check_alive(self, method: str, path: str) -> None:
        if self.state.dead_reason is not None:
            dead = EndpointError(f"[{self.spec.name}] {method} {path} not sent: the endpoint stopped answering "
                                 f"earlier in this run ({self.state.dead_reason})")
            dead.reason, dead.hint = self._dead_cause(), DEAD_HINT
            dead.depends_on = self.dead_depends_on()
            raise dead
        if self.state.hung_reason is not None and is_generation(path):
            error = EndpointTimeout(f"[{self.spec.name}] {method} {path} not sent: the engine is hung (an earlier "
                                    f"generation request of this run got no answer while GET /health still answers: "
                                    f"{self.state.hung_reason})")
            error.reason, error.hint = self._hung_cause(), HUNG_HINT
            raise error

    def request(self, method: str, path: str, *, json_body: object | None = None,
                timeout_s: float | None = None) -> httpx.Response:
        """One request; transport failures become EndpointError (and may mark the endpoint dead)."""
        self._probe_first(path)
        self._check_alive(method, path)
        if path == "/health":
            self.state.probed = True
            timeout_s = timeout_s or self.spec.health_timeout_s
        kwargs: dict[str, Any] = {"json": json_body} if json_body is not None else {}
        if timeout_s is not None:
            kwargs["timeout"] = timeout_s
        try:
            with httpx_errors(f"{method} {self.client.base_url}{path}",
                              timeout_s=timeout_s or self.spec.request_timeout_s):
                response = self.client.request(method, path, **kwargs)
        except EndpointError as error:
            raise self._fail(path, error) from error
        self._note_server_error(method, path, response.status_code)
        return response

    def get_json(self, path: str, *, method: str = "GET", json_body: object | None = None) -> Any:
        """JSON of a 2xx answer, or EndpointError saying what came back (`llmval.io.http.json_of`)."""
        return json_of(self.request(method, path, json_body=json_body), endpoint=self.spec.name, method=method,
                       path=path)

    def chat(self, body: dict) -> httpx.Response:
        """POST /v1/chat/completions (non-streaming); the caller reads status and JSON. An answer that the
        inventory's model is not served raises ModelNotServed: every generating check depends on it."""
        response = self.request("POST", "/v1/chat/completions", json_body={"model": self.spec.model, **body})
        if response.status_code == 404 and self.spec.model in response.text:
            raise ModelNotServed(f"[{self.spec.name}] the endpoint does not serve model {self.spec.model!r} "
                                 f"(see serving.model.id): HTTP 404: {excerpt(response.text, 200)}")
        return response

    def chat_stream(self, body: dict) -> tuple[int, StreamedChat | str]:
        """POST a streaming chat completion; (200, joined stream) or (status, error body)."""
        payload = {"model": self.spec.model, **body, "stream": True,
                   "stream_options": {"include_usage": True}}
        self._probe_first("/v1/chat/completions")
        self._check_alive("POST", "/v1/chat/completions")
        path = "/v1/chat/completions (stream)"
        try:
            with httpx_errors(f"POST {self.client.base_url}{path}", timeout_s=self.spec.request_timeout_s), \
                    self.client.stream("POST", "/v1/chat/completions", json=payload) as response:
                if response.status_code >= 400:
                    response.read()
                    self._note_server_error("POST", path, response.status_code)
                    return response.status_code, response.text
                if why := not_event_stream(response.headers.get("content-type", "")):
                    raise EndpointProtocolError(why, kind="SSEError", detail=why)  # named just below
                # the suite's one SSE reader (llmval.io.sse), as the load generator's
                max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
                return 200, join_chat_stream(data_events(response.iter_bytes()),
                                             max_tokens=max_tokens if isinstance(max_tokens, int) else None)
        except EndpointError as error:
            if error.kind == "SSEError":
                raise EndpointProtocolError(f"[{self.spec.name}] streamed chat: not an event stream: {error.detail}",
                                            kind=error.kind, detail=error.detail) from error
            raise self._fail(path, error) from error

    # ---- facts every OpenAI-compatible server has ---------------------------------------------
    def health(self) -> Fact:
        """HTTP status of GET /health (a 404 counts: plain OpenAI servers have none)."""
        response = self.request("GET", "/health")
        return Fact(response.status_code, "GET /health", shorten(response.text, 200))

    def probe_health(self) -> Fact:
        """GET /health as a verdict input: the status code, or the reason there was none."""
        try:
            return self.health()
        except EndpointError as error:
            return Fact(f"no answer: {error}", "GET /health")

    def generate(self, prompt: str, *, max_tokens: int = 16, **extra: Any) -> dict:
        """A real chat completion at temperature 0; the JSON body, or EndpointError with the status."""
        response = self.chat({"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                              "temperature": 0, **extra})
        if response.status_code != 200:
            raise EndpointError(f"[{self.spec.name}] POST /v1/chat/completions: HTTP {response.status_code}: "
                                f"{excerpt(response.text)}", status=response.status_code)
        what = f"[{self.spec.name}] POST /v1/chat/completions"
        return checked(ChatCompletion, parse_json(response.text, what), what)

    length_refusals: ClassVar[tuple[re.Pattern[str], ...]] = ()
    """How this engine words a request refused for its prompt's length, the prompt's token count (or a lower bound
    of it) in group 1: a length calibration counting by usage learns from the refusal that the prompt is too long."""

    @classmethod
    def refused_prompt_tokens(cls, body: str) -> int | None:
        """The prompt tokens a length refusal names (at least), or None when `body` is no such refusal."""
        for pattern in cls.length_refusals:
            if found := pattern.search(body):
                return int(found.group(1))
        return None

    tokenize_failure_hint: ClassVar[str] = ""
    """What an owner should look at when this engine's /tokenize answers without tokens (engine-specific)."""

    def tokenize_probe(self) -> Fact:
        """POST /tokenize of a short prompt, as the suite's length calibrations send it: Fact(token count, ...).
        NotExposed when the engine has none (no `tokenize_form`, or 404/405/501); TokenizeFailed (its answer
        quoted) when it answered without token ids."""
        if self.tokenize_form is None:
            raise NotExposed(f"[{self.spec.name}] the {self.kind} engine has no /tokenize")
        body = {"model": self.spec.model, "prompt": "Reply with OK.", "add_special_tokens": True}
        response = self.request("POST", "/tokenize", json_body=body)
        if response.status_code in (404, 405, 501):
            raise NotExposed(f"[{self.spec.name}] POST /tokenize: HTTP {response.status_code}")
        what = f"[{self.spec.name}] POST /tokenize: HTTP {response.status_code}"
        if response.status_code >= 400:
            raise TokenizeFailed(f"{what}: {excerpt(response.text)}")
        try:
            data = parse_json(response.text, what)
        except EndpointError:
            data = None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list):
            raise TokenizeFailed(f"{what} without a `tokens` list: {excerpt(response.text)}")
        return Fact(len(tokens), 'POST /tokenize {"prompt": "Reply with OK."}', shorten(response.text, 200))

    def auto_tool_choice_probe(self) -> Fact:
        """Send a tool with tool_choice="auto"; the HTTP status and error text (200 means accepted)."""
        tool = {"type": "function", "function": {"name": "get_time", "description": "Current time.",
                                                 "parameters": {"type": "object", "properties": {}}}}
        response = self.chat({"messages": [{"role": "user", "content": "What time is it?"}], "tools": [tool],
                              "tool_choice": "auto", "max_tokens": 16, "temperature": 0})
        return Fact(response.status_code, 'POST /v1/chat/completions tools + tool_choice="auto"',
                    shorten(response.text, 300) if response.status_code != 200 else "")

    @functools.cached_property
    def model_cards(self) -> list[dict]:
        """`data` of GET /v1/models."""
        return checked(ModelList, self.get_json("/v1/models"), f"[{self.spec.name}] GET /v1/models")["data"]

    def model_card(self) -> dict:
        """The /v1/models card of the inventory's model; ModelNotServed when it is not listed."""
        card = next((c for c in self.model_cards if c.get("id") == self.spec.model), None)
        if card is None:
            served = sorted(str(c.get("id")) for c in self.model_cards)
            raise ModelNotServed(f"[{self.spec.name}] /v1/models lists {served}, not {self.spec.model!r} "
                                 "(see serving.model.id)")
        return card

    def model_aliases(self) -> tuple[list[str], list[str]]:
        """(aliases, others) among the /v1/models ids besides the inventory's model: an alias is another name of
        the same served model (vLLM `--served-model-name a b` lists one card per name, each with the model's
        `root` and no `parent`); anything else (another root, an adapter with a `parent`) is another model.

        >>> cards = [{"id": "qwen", "root": "/m/Q"}, {"id": "qwen-fast", "root": "/m/Q"}, {"id": "glm", "root": "/m/G"}]
        >>> served_aliases(cards, "qwen")
        (['qwen-fast'], ['glm'])
        """
        return served_aliases(self.model_cards, self.spec.model)

    card_root_is_path: ClassVar[bool] = False
    """Whether a /v1/models card's `root` is the weights' path the engine loaded (vLLM: `--model`; SGLang: the
    served name again, so read as a path only where it says something else; a plain OpenAI server: likewise)."""

    def model_evidence(self) -> list[ModelEvidence]:
        """Every source's word on the model served (`llmval.engines.identity`): the /v1/models card of the
        inventory's model (its name, and its `root` where that is the weights' path), then what the engine itself
        says (`engine_model_evidence`). ModelNotServed when the card is not listed."""
        card = self.model_card()
        root = card.get("root")
        # SGLang's root repeats the served name; one that says something else (and is no adapter's base: no parent)
        # names what is underneath, whatever the engine
        names_weights = self.card_root_is_path or (root != card.get("id") and not card.get("parent"))
        path = str(root) if root and names_weights else None
        found = [ModelEvidence("GET /v1/models" + (" root" if path else ""), (str(card.get("id")),), path,
                               shorten(f"id={card.get('id')!r}, root={root!r}", 200))]
        return found + self.engine_model_evidence()

    def engine_model_evidence(self) -> list[ModelEvidence]:
        """What the engine says of the model it serves besides /v1/models (engines override it); a source that
        does not answer is left out, never guessed."""
        return []

    @property
    def version(self) -> Fact:
        raise NotExposed(f"[{self.spec.name}] a plain OpenAI-compatible server reports no engine version")

    @classmethod
    def metric_families(cls) -> frozenset[str]:
        """Every `/metrics` family this adapter reads: a scrape keeps only their lines (`parse_metrics(families=)`)."""
        counters = (getattr(cls.load_counters, name) for name in LoadCounters.__dataclass_fields__)
        return frozenset(name for name in (*counters, *cls.sampled_metrics.gauges().values(),
                                           *cls.sampled_metrics.counters().values(), *cls.read_metrics) if name)

    def metrics(self) -> Metrics:
        """One scrape of GET /metrics, parsed once and only for the adapter's families (`metric_families`).

        Each call scrapes: a fact read of it is one request, as the recorded runs made it (a replay answers the Nth
        `GET /metrics` with the Nth recorded scrape, so sharing one scrape between the KV-cache facts moved the
        speculative counters' before/after onto the wrong scrapes of the REAL recordings); what a second call
        costs is bounded by the families and `MAX_SERIES` (a 69 MiB scrape: 0.7 s, 0.1 MiB)."""
        response = self.request("GET", "/metrics")
        if response.status_code == 404:
            raise NotExposed(f"[{self.spec.name}] GET /metrics: 404 (SGLang needs --enable-metrics)")
        if response.status_code >= 400:
            raise EndpointError(f"[{self.spec.name}] GET /metrics: HTTP {response.status_code}")
        return parse_metrics(response.text, f"[{self.spec.name}] /metrics", families=self.metric_families())

    def missing_log_keys(self) -> str:
        """Which of the endpoint's `logs` and `host` (a journal, container or file is read on a host) the inventory
        leaves out, as a message names them: `llmval init`'s inventory declares `host` and leaves `logs` commented,
        and "no `logs` (and `host`)" read as if its `host` were missing too."""
        missing = [f"`{key}`" for key in ("logs", "host") if not getattr(self.spec, key, None)]
        return " or ".join(missing) if missing else "`logs` this run can read"

    @functools.cached_property
    def log_text(self) -> str:
        """The evidence lines of the engine log (see logsource.py); NotExposed when none is declared."""
        if self._read_log is None:
            raise NotExposed(f"[{self.spec.name}] the inventory declares no {self.missing_log_keys()} for this "
                             "endpoint; add e.g. logs = \"journal:<unit>\" to read its startup log")
        return self._read_log()

    def last_log_errors(self) -> list[str]:
        """The engine's last words: the last statements of failure of its log's current start (`ERROR` records,
        the exception a traceback ends with; `llmval.engines.logs.last_error_statements`), read when its server
        does not answer. Unlike `log_text` it is read whoever wrote it: a dead server's log is the evidence of why
        it died. NotExposed when the inventory declares no log."""
        if self._read_log_errors is None:
            raise NotExposed(f"[{self.spec.name}] the inventory declares no {self.missing_log_keys()} for this "
                             "endpoint, so the engine's last error lines cannot be quoted")
        return last_error_statements(self._log_errors_text)

    @functools.cached_property
    def _log_window_text(self) -> str:
        """The error read's window whole: the engine's error lines and vLLM-under-Ray's placement-group lines."""
        assert self._read_log_errors is not None
        return self._read_log_errors()

    @property
    def _log_errors_text(self) -> str:
        """The window's error lines: a placement-group wait is the cause (`last_words`), never a last error."""
        return without_placement_lines(self._log_window_text)

    prefix_cache_hint: ClassVar[str] = "prefix caching off in the engine's launch flags"
    """How this engine's prefix cache is turned off, for a hint: each engine spells it its own way."""
    death_lines: ClassVar[tuple[str, ...]] = TORCH_DEATH_LINES
    """The lines in which this engine says it died (`llmval.engines.logs`: SGLang's `crashed with exit code`, vLLM's
    `EngineDeadError`, torch's `CUDA error: out of memory`): the death `last_words` quotes, with its time."""

    def last_words(self) -> str:
        """The engine's end in its own words for a verdict's evidence, or why there are none: from its current start
        only, the line that says what died (this adapter's `death_lines`) with its time, and the error statements
        written close to it (`llmval.engines.logs.death_evidence`: never a startup line, nor one minutes older)."""
        try:
            self.last_log_errors()  # NotExposed when no log is declared
            found = death_evidence(self._log_errors_text, self.death_lines)
        except ReplayMiss:
            return "the engine log's last error lines: not in this recording (made before the suite read them)"
        except LlmvalError as error:
            return f"the engine log's last error lines not read: {str(error).splitlines()[0]}"
        stall = placement_group_stall(self._log_window_text)
        cause = f"{PLACEMENT_WAIT}: {stall!r}; " if stall else ""
        if not found.last:
            return cause + (f"the engine log ({self.spec.logs}) holds no error line since its last start (a process "
                            "killed with SIGKILL writes none)")
        at = f"at {found.at}" if found.at else "at a time the log does not say"
        if found.death:
            near = f"; with it: {' | '.join(repr(x) for x in found.near)}" if found.near else ""
            return f"{cause}what died, {at}: {found.death!r}{near} (from {self.spec.logs})"
        near = f"; before it: {' | '.join(repr(x) for x in found.near)}" if found.near else ""
        return f"{cause}the engine log's last error, {at}: {found.last!r}{near} (from {self.spec.logs})"

    def _not_exposed(self, what: str) -> NotExposed:
        return NotExposed(f"[{self.spec.name}] engine {self.kind!r} exposes no {what}")

    def kv_cache_evidence(self) -> list[KvEvidence]:
        raise self._not_exposed("KV cache dtype")

    def kv_fp8_quotes(self) -> list[str]:
        """Lines of any source that state an FP8/FP4 KV cache."""
        return []

    def attention_backend(self) -> Fact:
        raise self._not_exposed("attention backend")

    def speculative(self) -> dict[str, Fact]:
        raise self._not_exposed("speculative decoding settings")

    def tool_call_parser(self) -> Fact:
        raise self._not_exposed("tool-call parser setting")

    def reasoning_parser(self) -> Fact:
        raise self._not_exposed("reasoning parser setting")

    def tensor_parallel_size(self) -> Fact:
        raise self._not_exposed("tensor-parallel size")

    def nodes(self) -> Fact:
        raise self._not_exposed("node count")

    def executor_backend(self) -> Fact:
        raise self._not_exposed("distributed executor backend")

    def model_dtype(self) -> Fact:
        raise self._not_exposed("model dtype")

    def acceptance_snapshot(self) -> Metrics:
        """Counters to diff around this run's own traffic (see `accept_length`)."""
        raise self._not_exposed("speculative acceptance counters")

    @classmethod
    def acceptance(cls, before: Metrics, after: Metrics) -> Acceptance:
        """Speculative acceptance between two scrapes (the one computation; engines override it)."""
        return Acceptance(None, None, "/metrics", missing=f"engine {cls.kind!r} exposes no speculative "
                                                          "acceptance counters")

    @classmethod
    def normalize_metrics(cls, metrics: Metrics) -> Metrics:
        """One scrape as the engine means it, before the sampler reads its gauges and counters (engines override
        it: SGLang drops its per-priority breakdown samples and reads its lazily created counters as 0)."""
        return metrics

    @classmethod
    def prefix_cache_hits(cls, before: Metrics, after: Metrics) -> CacheHits:
        """Prefix-cache hits between two scrapes (the one computation; engines override it)."""
        return CacheHits(None, None, None, "/metrics", missing=f"engine {cls.kind!r} exposes no prefix-cache "
                                                               "counters")

    def draft_ceiling(self) -> float | None:
        """The most tokens one speculative step can emit (`ranges.accept_length_ceiling`), from the step and draft
        counts the engine reports and those the inventory declares, the larger of each (a wrong one fails its own
        check); None when neither says."""
        reported: dict[str, object] = {}
        try:
            reported = {key: fact.value for key, fact in self.speculative().items()}
        except LlmvalError:
            pass  # the engine does not say: the inventory's numbers bound it
        declared = self.spec.expect.speculative
        steps = [v for v in (reported.get("num_steps"), declared and declared.num_steps) if isinstance(v, int)]
        drafts = [v for v in (reported.get("num_draft_tokens"), declared and declared.num_draft_tokens)
                  if isinstance(v, int)]
        return accept_length_ceiling(num_steps=max(steps, default=None), num_draft_tokens=max(drafts, default=None))

    @classmethod
    def window_log_acceptance(cls, window: str) -> Acceptance:
        """Speculative acceptance over the lines the engine logged during a perf window (`logs.lines_since`: vLLM's
        `SpecDecoding metrics:` intervals, SGLang's `accept len`), for a window whose /metrics has no acceptance
        counters; engines override it."""
        return Acceptance(None, None, "engine log", missing=f"engine {cls.kind!r} logs no speculative acceptance")

    def log_acceptance(self) -> Acceptance:
        """Speculative acceptance as the engine's own log states it (its latest periodic line: vLLM's
        `SpecDecoding metrics:`, SGLang's `accept len`); engines override it. NotExposed when no log is declared."""
        return Acceptance(None, None, "engine log", missing=f"engine {self.kind!r} logs no speculative acceptance")

    def accept_length(self, before: Metrics, after: Metrics) -> Fact:
        """`acceptance` as a Fact (length rounded to 3 places); where /metrics has no acceptance counters, the
        engine log's latest acceptance line (`log_acceptance`), the source saying so; NotExposed when neither;
        ImpossibleMetric when the length or rate is outside its physical range, whichever source stated it (the
        length's ceiling: `draft_ceiling`)."""
        found = self.acceptance(before, after)
        missing = ""
        if found.missing:
            try:
                logged = self.log_acceptance()
            except LlmvalError as error:  # no log declared, not the serving engine's (StaleEvidence), not recorded
                logged = Acceptance(None, None, "engine log", missing=str(error).splitlines()[0][:300])
            if logged.missing or logged.length is None:
                raise NotExposed(f"[{self.spec.name}] {found.missing}; the engine log: {logged.missing or 'no value'}")
            missing, found = found.missing, logged
        if found.length is not None:  # its ceiling asks the engine's settings: only when there is a length to bound
            found = found.within(self.draft_ceiling())
        if found.impossible:
            raise ImpossibleMetric(f"[{self.spec.name}] {found.impossible} (from {found.source})")
        if missing:
            return Fact(round(found.length, 3), f"{found.source} (/metrics: {missing})", found.quote)
        return Fact(None if found.length is None else round(found.length, 3), found.source, found.quote)

    @classmethod
    def log_server_pids(cls, log_text: str) -> list[int]:
        """The pids of the server process(es) the engine's own log lines name ([] when its lines carry none):
        `llmval.engines.serving_process` ties a startup log to the process that serves the port now."""
        return []

    @classmethod
    def detect(cls, adapter: EngineAdapter, owners: list[str]) -> Fact | None:
        """This engine's Fact(kind) when the server behind `adapter` is this engine (`owners`: the
        /v1/models `owned_by` values), else None. The plain OpenAI server is what is left: None."""
        return None

    @classmethod
    def identity_extras(cls, info: dict | None, metrics: Metrics | None) -> dict:
        """Engine-specific parts of a perf server identity (see `llmval.load.server_identity`): from the
        JSON of the first `identity_info_paths` that answered, and from one `/metrics` scrape."""
        return {}


def served_aliases(cards: list[dict], model: str) -> tuple[list[str], list[str]]:
    """See `EngineAdapter.model_aliases`: (aliases of `model`, other models) among the ids of `cards`."""
    card = next((c for c in cards if c.get("id") == model), None)
    root = card.get("root") if card is not None else None
    aliases, others = [], []
    for other in cards:
        if other.get("id") == model:
            continue
        same = root is not None and other.get("root") == root and not other.get("parent")
        (aliases if same else others).append(str(other.get("id", "?")))
    return sorted(aliases), sorted(others)


def resolve_auto(raw: str, model_dtype: str | None) -> str | None:
    """`auto` means the model dtype; anything else is what it says."""
    value = normalize_dtype(raw)
    if value == "auto":
        return model_dtype
    return value
