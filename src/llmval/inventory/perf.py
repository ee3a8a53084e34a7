"""Performance gates of an endpoint, measured with `vllm bench serve`'s definitions."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ._base import JudgedBy, Scaled, Spec
from .values import Name

MIN_REQUEST_RATE = 0.01
"""req/s: a slower rate is not a load (and 1e-300 would wait forever for its second request)."""
MAX_SWEEP_ARRIVALS_S = 86_400
"""The longest a sweep's Poisson arrivals may take in expectation (rate_requests / rate, summed over the rates)."""


TOOL_CATEGORIES = ("flat", "nested", "enum", "bigint", "parallel")
"""Tool-call catalogue categories a correctness probe may sample (large_string: too long to sample under load)."""


class CorrectnessSpec(Spec):
    """Correctness under load (`[perf.correctness]`): sampled NIAH cells and tool calls asked with the engine idle,
    then while the load generator holds it at `concurrency`, then idle again; temperature 0 throughout.

    Gates `perf.correctness.*` (tests/perf/test_correctness_under_load.py): a needle found idle is still found
    under load; a tool call valid idle is still valid (validity not lower); a call with exactly the expected values
    idle still has them. `compare = "text"` also requires the very same text (only for an engine run
    batch-invariant: vLLM does not promise equal outputs at temperature 0 in different batches).
    """

    concurrency: int | None = Field(None, ge=1, le=100_000)
    """Streams the load holds while the probes are asked; None: the section's `throughput_concurrency`."""
    niah_lengths: list[Annotated[int, Field(ge=128, le=2**24)]] = Field([1024], max_length=16)
    """Context lengths of the sampled NIAH cells (the plain grid's cells of these lengths, seed `niah_seed`)."""
    niah_depths: list[float] = Field([0.0, 0.5, 1.0], max_length=101)
    """Needle depths sampled (one cell per length and depth); empty: no NIAH probe."""
    niah_seed: int = Field(0, ge=0, le=2**32 - 1)
    tool_categories: list[Literal[TOOL_CATEGORIES]] = Field(["flat", "enum", "bigint"], max_length=5)  # type: ignore[valid-type]
    """Tool-call catalogue categories sampled (the endpoint's `tool_calls` variant and tool_choice); empty: none."""
    tool_cases_per_category: int = Field(1, ge=1, le=100)
    compare: Literal["judged", "text"] = "judged"
    """judged: the judged answer must not get worse (needle found, call valid, exact values); text: also the
    same text, token for token."""
    repeat_idle: bool = True
    """Ask every probe idle once more after the load: a probe whose idle answers differ cannot be judged."""
    hold_timeout_s: float = Field(120, gt=0, le=86_400)
    """How long the load may take to reach `concurrency` streams in flight before the probes are asked."""

    @field_validator("niah_depths")
    @classmethod
    def _depths_are_fractions(cls, depths: list[float]) -> list[float]:
        if any(not 0 <= d <= 1 for d in depths) or len(set(depths)) != len(depths):
            raise ValueError(f"niah_depths are distinct fractions of the haystack in [0, 1]; got {depths}")
        return depths

    @model_validator(mode="after")
    def _samples_something(self) -> CorrectnessSpec:
        if not self.niah_depths and not self.tool_categories:
            raise ValueError("[perf.correctness] samples nothing: declare niah_depths or tool_categories")
        if len(set(self.niah_lengths)) != len(self.niah_lengths) or (self.niah_depths and not self.niah_lengths):
            raise ValueError(f"niah_lengths must be distinct and not empty; got {self.niah_lengths}")
        if len(set(self.tool_categories)) != len(self.tool_categories):
            raise ValueError(f"tool_categories must not repeat; got {self.tool_categories}")
        return self


class AgenticLoadSpec(Spec):
    """The owners' multi-turn agentic workload as load (`llmval.load._agentic`): `sessions` agent sessions replaying
    the agentic grid's seeded transcripts, each turn the previous prompt plus one tool call and its result, on one
    system prompt and tool list shared by all sessions, `concurrency` sessions at once."""

    sessions: int = Field(4, ge=1, le=100_000)
    turns: int = Field(6, ge=1, le=1_000)
    """Turns per session (turn 1: the task alone; each later turn adds one prior step)."""
    concurrency: int = Field(2, ge=1, le=100_000)
    output_len: int = Field(16, ge=1, le=2**20)
    """Tokens each turn generates (EOS ignored where the engine honours it)."""
    think_s: float = Field(0.0, ge=0, le=3600)
    """Pause between a turn's answer and the session's next turn."""
    seed: int = Field(0, ge=0, le=2**31)
    tools: bool = True
    """Send the agent's tool definitions (`tool_choice="auto"`: the server needs its tool parser enabled)."""
    max_context_tokens: int | None = Field(None, ge=64, le=2**24)
    """End a session before a turn whose prompt would pass this (default: the endpoint's max_model_len less the
    answer and 64 tokens, where declared)."""
    prefix_cache_hit_min: float | None = Field(None, ge=0, le=1)
    """Minimum prefix-cache hit rate over the run, from the engine's own counters (vLLM Δprefix_cache_hits /
    Δprefix_cache_queries, in tokens)."""
    goodput_min: float | None = Field(None, gt=0, le=1)
    """Minimum share of turns within the section's goodput_ttft_ms / goodput_tpot_ms."""

    @model_validator(mode="after")
    def _sessions_fill_the_concurrency(self) -> AgenticLoadSpec:
        if self.concurrency > self.sessions:
            raise ValueError(f"concurrency {self.concurrency} is more than the {self.sessions} sessions that could "
                             "run at once: raise sessions or lower concurrency")
        if self.sessions * self.turns > 1_000_000:
            raise ValueError(f"{self.sessions} sessions x {self.turns} turns is more than a million requests")
        return self


class MachineScale(Spec):
    """Gates stated relative to the machine the run is on (the embedded default): the section's gates hold on a
    machine whose calibration (`llmval.load._calibrate`, on the CPUs the engine may use) scores
    `reference_steps_s`; a run on a machine scoring `s` scales them by `factor = min(1, s / reference_steps_s)`:
    decode and output tok/s minimums and the sweep's request rates times `factor`, the TTFT maximum and the goodput
    SLOs divided by it. Only for an engine on the host the suite runs on (a remote engine's machine is not this
    one: the gates could not be checked)."""

    reference_steps_s: float = Field(gt=0, le=1e6)
    """The calibration score (decode-shaped steps/s) of the machine where the gates were set."""
    reference: str = Field("", max_length=500)
    """Where and when that was measured (machine, load, the engine's numbers then), for the reports."""


class PerfSpec(Spec):
    """Performance gates, measured with vLLM's definitions (`vllm bench serve`).

    Two runs serve the gates: C=1 (`c1_requests` sequential requests: decode tok/s = 1000 / median
    TPOT) and C=`throughput_concurrency` (k·C requests: output throughput). Every run first sends
    `warmup_requests` (at least C) unmeasured requests, uses prompts of exactly `input_len` tokens
    unique per request and per run, `output_len` tokens with EOS ignored, and a pinned temperature.
    """

    endpoint: Name
    name: Name | None = None
    """Test-id label; needed only when one endpoint has several [[perf]] sections (default: the endpoint)."""
    input_len: int = Field(256, ge=8, le=2**24)
    output_len: int = Field(128, ge=2, le=2**24)
    temperature: float = Field(0.0, ge=0, le=100)
    """Pinned sampling temperature (servers' defaults differ, and speculative acceptance depends on it)."""
    ignore_eos: bool = True
    """Send `ignore_eos` so every request generates `output_len` tokens (vLLM and SGLang honour it)."""
    warmup_requests: int = Field(2, ge=0, le=10_000)
    c1_requests: int = Field(10, ge=2, le=100_000)
    """Measured requests of the C=1 run (the median TPOT needs 10-20)."""
    requests_per_concurrency: int = Field(4, ge=1, le=10_000)
    """k in k·C requests run at concurrency C."""
    decode_tok_s_c1_min: Annotated[float | None, JudgedBy("perf.decode.tok_s_c1"), Scaled("up")] = Field(
        None, gt=0, le=1e12)
    """Minimum decode tok/s of one stream (1000 / median TPOT at concurrency 1)."""
    throughput_concurrency: int | None = Field(None, ge=1, le=100_000)
    output_tok_s_min: Annotated[float | None, JudgedBy("perf.throughput.output_tok_s"), Scaled("up")] = Field(
        None, gt=0, le=1e12)
    """Minimum output throughput at `throughput_concurrency`."""
    ttft_p99_ms_max: Annotated[float | None, JudgedBy("perf.ttft.p99_ms"), Scaled("down")] = Field(
        None, gt=0, le=86_400_000)
    ttft_concurrency: int = Field(1, ge=1, le=100_000)
    """Concurrency of the run whose TTFT p99 is gated (1, or `throughput_concurrency`)."""
    baseline_tolerance: Annotated[float, JudgedBy("perf.baseline.*")] = Field(0.10, ge=0, lt=1)
    """Allowed relative regression against the stored baseline."""
    quoted_tok_s: float | None = Field(None, ge=0, le=1e9)
    """The number the owners quote (e.g. 277 tok/s on kpro6), for the status document."""
    request_rates: list[Annotated[float, Field(ge=MIN_REQUEST_RATE, le=1e6)]] = Field(default_factory=list,
                                                                                        max_length=64)
    """A sweep over request rates (req/s, Poisson arrivals as `vllm bench serve --request-rate`); one run each.
    At least 0.01 req/s each, and the sweep's arrivals alone (rate_requests / rate, summed) at most a day."""
    rate_requests: int = Field(16, ge=2, le=100_000)
    """Measured requests per rate of the sweep."""
    rate_max_concurrency: int | None = Field(None, ge=1, le=100_000)
    """Concurrency cap during the sweep (`--max-concurrency`); None: uncapped, as vLLM's default."""
    goodput_ttft_ms: Annotated[float | None, Scaled("down")] = Field(None, gt=0, le=86_400_000)
    """TTFT SLO of a request counted as goodput."""
    goodput_tpot_ms: Annotated[float | None, Scaled("down")] = Field(None, gt=0, le=86_400_000)
    """TPOT SLO of a request counted as goodput."""
    goodput_min: Annotated[float | None, JudgedBy("perf.goodput.share")] = Field(None, gt=0, le=1)
    """Minimum share of requests within the SLOs, at every rate of the sweep."""
    metrics_interval_s: float = Field(1.0, ge=0.05, le=60)
    """How often the engine's /metrics is sampled through every measured window (queue, KV usage, preemptions,
    prefix cache; `llmval.load` engine samples in reports/perf/*.json and the run's plot)."""
    agentic_load: Annotated[AgenticLoadSpec | None, JudgedBy("perf.agentic.*")] = None
    """A multi-turn agentic load run (`[perf.agentic_load]`): TTFT by context length, prefix-cache hit rate,
    goodput under this section's goodput SLOs."""
    preemptions_max: Annotated[int | None, JudgedBy("perf.engine.preemptions")] = Field(None, ge=0, le=10**9)
    """Most requests the engine may preempt during any run of this section (vLLM `vllm:num_preemptions`;
    0: the KV cache holds the declared concurrency)."""
    correctness: Annotated[CorrectnessSpec | None, JudgedBy("perf.correctness.*")] = None
    """Correctness under load: sampled NIAH cells and tool calls, idle vs under load (`[perf.correctness]`)."""

    machine: MachineScale | None = None
    """Gates relative to this machine's calibration (None: the gates are absolute numbers, as for a real
    deployment: kpro6, the Sparks)."""

    @model_validator(mode="after")
    def _gates_are_consistent(self) -> PerfSpec:
        if self.output_tok_s_min is not None and self.throughput_concurrency is None:
            raise ValueError("output_tok_s_min needs throughput_concurrency (the C it is measured at)")
        if self.ttft_concurrency not in {1, self.throughput_concurrency}:
            raise ValueError(f"ttft_concurrency {self.ttft_concurrency} is neither 1 nor throughput_concurrency "
                             f"({self.throughput_concurrency}); the TTFT gate reuses one of those two runs")
        if self.goodput_min is not None and not self.request_rates:
            raise ValueError("goodput_min needs request_rates (the sweep it is judged on)")
        if self.goodput_min is not None and self.goodput_ttft_ms is None and self.goodput_tpot_ms is None:
            raise ValueError("goodput_min needs goodput_ttft_ms or goodput_tpot_ms (the SLOs a request must meet)")
        agentic = self.agentic_load
        if agentic is not None and agentic.goodput_min is not None and self.goodput_ttft_ms is None \
                and self.goodput_tpot_ms is None:
            raise ValueError("agentic_load.goodput_min needs goodput_ttft_ms or goodput_tpot_ms (the SLOs a turn "
                             "must meet)")
        if any(rate <= 0 for rate in self.request_rates):
            raise ValueError(f"request_rates must be positive req/s, got {self.request_rates}")
        if self.correctness is not None and (self.correctness.concurrency or self.throughput_concurrency) is None:
            raise ValueError("[perf.correctness] needs concurrency or the section's throughput_concurrency (the load "
                             "it holds while the probes are asked)")
        arrivals_s = sum(self.rate_requests / rate for rate in self.request_rates)
        if arrivals_s > MAX_SWEEP_ARRIVALS_S:  # a sweep that cannot end: bounded at load (issue 23.2)
            raise ValueError(f"the request-rate sweep's arrivals alone take about {arrivals_s:.3g} s "
                             f"(rate_requests {self.rate_requests} / each rate, summed), more than a day: "
                             "raise the rates or lower rate_requests")
        return self

    @property
    def label(self) -> str:
        return self.name or self.endpoint

    @property
    def concurrencies(self) -> list[int]:
        """The runs this section needs: C=1 always, plus the throughput concurrency."""
        return sorted({1, *([self.throughput_concurrency] if self.throughput_concurrency else [])})

    @property
    def correctness_concurrency(self) -> int | None:
        """The streams the correctness probes are asked under (None: no [perf.correctness])."""
        if self.correctness is None:
            return None
        return self.correctness.concurrency or self.throughput_concurrency

    def num_requests(self, concurrency: int) -> int:
        return self.c1_requests if concurrency == 1 else self.requests_per_concurrency * concurrency

    def warmups(self, concurrency: int) -> int:
        return max(self.warmup_requests, concurrency if self.warmup_requests else 0)
