"""The engine's own metrics sampled through a measured window: queue, KV-cache usage, preemptions, prefix cache.

A `MetricsSampler` scrapes `/metrics` every `interval_s` while a window is open, as an asyncio task beside the
streams it does not disturb: each scrape keeps only the lines of the metrics the engine's adapter names
(`EngineAdapter.sampled_metrics`, a string-prefix filter) and the text is parsed by the one Prometheus parser
(`engines.metrics.parse_metrics`) after the window closes, so the event loop that times the streams spends no
parse time inside it. The first sample is taken when the window opens and the last when it closes.

`EngineSamples` is what came back: per gauge its value at each sample (running, waiting, KV usage, ...), per
counter its growth since the window opened (preemptions, prefix-cache queried and hit tokens), the prefix-cache
hit rate over the window through the adapter (`prefix_cache_hits`: vLLM Δhits/Δqueries), how long each scrape
took, and the scrapes that failed (counted and named, never a failed run).

    async with MetricsSampler(client, "local-vllm", VllmAdapter, interval_s=1.0) as sampler:
        await run_the_window()
    sampler.samples.summary()["waiting_max"]
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from ..core.errors import LlmvalError
from ..engines import EngineAdapter
from ..engines.base import GAUGE_RANGES, MEAN_KEYS, OPTIONAL_KEYS, CacheHits
from ..engines.metrics import Metrics, kept_lines, parse_metrics
from ..engines.ranges import out_of_range
from ..io.http import httpx_errors

DEFAULT_INTERVAL_S = 1.0


@dataclass
class EngineSamples:
    """The engine's sampled metrics over one window (times in seconds since it opened)."""

    engine: str
    interval_s: float
    names: dict[str, str]
    """key (`waiting`, `kv_cache_usage`, `preemptions`, ...) -> the engine's metric name."""
    times_s: list[float] = field(default_factory=list)
    gauges: dict[str, list[float | None]] = field(default_factory=dict)
    counters: dict[str, list[float | None]] = field(default_factory=dict)
    """Growth since the first sample (None where the metric was absent from that scrape)."""
    scrape_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    cache_hits: CacheHits | None = None
    """The prefix-cache hit rate between the first and the last sample (the adapter's computation)."""
    label_impossible: list[str] = field(default_factory=list)
    """A label set's own value outside its range (`label_set_faults`), which the series' mean or sum would hide: a
    data-parallel rank's KV usage of 1.8 beside one of 0.1 averages 0.95; a rank's counter reset beside another's
    growth sums to growth."""

    @property
    def count(self) -> int:
        return len(self.times_s)

    @property
    def missing(self) -> list[str]:
        """Metric names the adapter names that no sample held (speculative ones aside: registered only with it)."""
        seen = {**self.gauges, **self.counters}
        return [self.names[k] for k in self.names
                if k not in OPTIONAL_KEYS and all(v is None for v in seen.get(k, [None]))]

    @property
    def impossible(self) -> str:
        """Every sampled figure outside its physical range (`llmval.engines.ranges`: a share above 1, a count below
        0, a counter that dropped since the window opened), named with the sample's time; "" when none is."""
        found = []
        for key, values in {**self.gauges, **self.counters}.items():
            bound = GAUGE_RANGES.get(key, "counter_growth")
            for at, value in zip(self.times_s, values, strict=False):
                if bound is not None and (why := out_of_range(bound, value, values=f"{self.names.get(key, key)} at "
                                                                                   f"{at:.1f} s")):
                    found.append(why)
                    break  # one per series: the first impossible sample names it
        for key, values in self.counters.items():  # growth since the first sample: it only grows from one to the next
            seen = [(at, v) for at, v in zip(self.times_s, values, strict=False) if v is not None]
            for (was_at, was), (at, now) in itertools.pairwise(seen):
                if why := out_of_range("counter_growth", now - was, values=f"{self.names.get(key, key)} from "
                                                                          f"{was_at:.1f} s to {at:.1f} s"):
                    found.append(why)  # 100 -> 300 -> 150: above the first sample, yet it fell (a reset)
                    break
        found += self.label_impossible
        if self.cache_hits is not None and self.cache_hits.impossible:
            found.append(self.cache_hits.impossible)
        drafts, accepted = self.counters.get("spec_drafts"), self.counters.get("spec_accepted_tokens")
        if drafts and accepted and drafts[-1] and accepted[-1] is not None:
            found += filter(None, [out_of_range("spec_accept_length", 1 + accepted[-1] / drafts[-1],
                                                values=f"1 + {accepted[-1]:g} accepted / {drafts[-1]:g} drafts")])
        return "; ".join(found)

    def summary(self) -> dict[str, float | int | None]:
        """Per gauge its max and mean over the samples, per counter its growth over the window, the hit rate."""
        out: dict[str, float | int | None] = {"samples": self.count}
        for key, values in self.gauges.items():
            present = [v for v in values if v is not None]
            out[f"{key}_max"] = max(present) if present else None
            out[f"{key}_mean"] = round(sum(present) / len(present), 4) if present else None
        for key, values in self.counters.items():
            present = [v for v in values if v is not None]
            out[key] = present[-1] if present else None
        out["prefix_cache_hit_rate"] = None if self.cache_hits is None or self.cache_hits.rate is None \
            else round(self.cache_hits.rate, 4)
        drafts, accepted = out.get("spec_drafts"), out.get("spec_accepted_tokens")
        if drafts and accepted is not None:  # vLLM's fetch_spec_decode_metrics over the window
            out["spec_acceptance_length"] = round(1 + accepted / drafts, 4)
        return out

    def as_json(self) -> dict:
        return {"engine": self.engine, "interval_s": self.interval_s, "names": self.names,
                "summary": self.summary(), "times_s": [round(t, 3) for t in self.times_s],
                "gauges": self.gauges, "counters": self.counters,
                "prefix_cache": None if self.cache_hits is None else {
                    "rate": self.cache_hits.rate, "queried_tokens": self.cache_hits.queried_tokens,
                    "hit_tokens": self.cache_hits.hit_tokens, "source": self.cache_hits.source,
                    "missing": self.cache_hits.missing},
                "scrape_ms": [round(x, 2) for x in self.scrape_ms], "failures": self.failures[:20],
                "failed_scrapes": len(self.failures)}


def _mean(metrics: Metrics, name: str) -> float | None:
    values = [s.value for s in metrics.find(name)]
    return sum(values) / len(values) if values else None


def keep_lines(text: str, names: tuple[str, ...]) -> str:
    """The lines of `text` that belong to `names` (samples, and their `# TYPE` lines so counters stay counters): the
    engines' one filter, `llmval.engines.metrics.kept_lines` (ParseError past its series and line bounds)."""
    return kept_lines(text, names)


def build_samples(engine: type[EngineAdapter], interval_s: float, scrapes: list[tuple[float, str]],
                  scrape_ms: list[float], failures: list[str]) -> EngineSamples:
    """Parse the kept scrapes `(seconds since the window opened, text)` into gauge and counter series."""
    names = engine.sampled_metrics
    gauges, counters = names.gauges(), names.counters()
    samples = EngineSamples(engine.kind, interval_s, {**gauges, **counters}, scrape_ms=scrape_ms,
                            failures=list(failures))
    parsed: list[tuple[float, Metrics]] = []
    for at, text in scrapes:
        try:
            parsed.append((at, engine.normalize_metrics(parse_metrics(text))))
        except LlmvalError as error:
            samples.failures.append(f"at {at:.1f} s: {error}")
    samples.times_s = [at for at, _ in parsed]
    samples.gauges = {k: [_mean(m, n) if k in MEAN_KEYS else m.total(n) for _, m in parsed] for k, n in gauges.items()}
    first: dict[str, float | None] = {k: parsed[0][1].total(n) if parsed else None for k, n in counters.items()}
    samples.counters = {k: [None if (v := m.total(n)) is None or first[k] is None else v - first[k]
                            for _, m in parsed] for k, n in counters.items()}
    if len(parsed) >= 2:
        samples.cache_hits = engine.prefix_cache_hits(parsed[0][1], parsed[-1][1])
    samples.label_impossible = label_set_faults(parsed, gauges, counters)
    return samples


def label_set_faults(parsed: list[tuple[float, Metrics]], gauges: dict[str, str],
                     counters: dict[str, str]) -> list[str]:
    """Each series' first label set outside its physical range at some scrape: a gauge's own value (before it is
    averaged or summed with other ranks'), a counter's value below 0 or below its value at the previous scrape."""
    found: list[str] = []
    for key, name in gauges.items():
        bound = GAUGE_RANGES.get(key)
        why = next((why for at, metrics in parsed for sample in metrics.find(name) if bound is not None and
                    (why := out_of_range(bound, sample.value, values=f"{name}{_labels(sample.labels)} at {at:.1f} s"))),
                   None)
        found += [why] if why else []
    for name in counters.values():
        last: dict[tuple, float] = {}
        why = None
        for at, metrics in parsed:
            for sample in metrics.find(name):
                labels = tuple(sorted(sample.labels.items()))
                said = f"{name}{_labels(sample.labels)} at {at:.1f} s"
                why = out_of_range("counter_value", sample.value, values=said) or (
                    out_of_range("counter_growth", sample.value - last[labels], values=f"{said}, from "
                                 f"{last[labels]:g}") if labels in last else None)
                if why:
                    break
                last[labels] = sample.value
            if why:
                break
        found += [why] if why else []
    return found


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else ""


class MetricsSampler:
    """Scrapes the engine's `/metrics` every `interval_s` from `start()` to `stop()` (or as a context manager)."""

    def __init__(self, client: httpx.AsyncClient, endpoint: str, engine: type[EngineAdapter], *,
                 interval_s: float = DEFAULT_INTERVAL_S, clock: Callable[[], float] = time.perf_counter):
        self.client, self.endpoint, self.engine = client, endpoint, engine
        self.interval_s, self.clock = interval_s, clock
        self.names = tuple(sorted(set(engine.sampled_metrics.gauges().values())
                                  | set(engine.sampled_metrics.counters().values())))
        self._scrapes: list[tuple[float, str]] = []
        self._scrape_ms: list[float] = []
        self._failures: list[str] = []
        self._task: asyncio.Task | None = None
        self._opened = 0.0
        self.samples: EngineSamples | None = None

    @property
    def is_active(self) -> bool:
        """False when the engine names no metric to sample (nothing is scraped)."""
        return bool(self.names)

    async def _scrape(self) -> None:
        started = self.clock()
        try:
            with httpx_errors(f"[{self.endpoint}] GET /metrics"):
                response = await self.client.get("/metrics")
        except LlmvalError as error:
            self._failures.append(f"at {started - self._opened:.1f} s: {error}")
            return
        self._scrape_ms.append((self.clock() - started) * 1000)
        if response.status_code != 200:
            self._failures.append(f"at {started - self._opened:.1f} s: GET /metrics answered "
                                  f"HTTP {response.status_code}")
            return
        try:
            kept = keep_lines(response.text, self.names)
        except LlmvalError as error:  # over a bound: this sample is a failure, named; the window goes on
            self._failures.append(f"at {started - self._opened:.1f} s: {error}")
            return
        self._scrapes.append((started - self._opened, kept))

    async def _loop(self) -> None:
        due = self.clock()
        while True:
            due += self.interval_s
            await asyncio.sleep(max(0.0, due - self.clock()))
            await self._scrape()

    async def start(self) -> None:
        """Take the first sample now, then one every `interval_s` in the background."""
        self._opened = self.clock()
        if not self.is_active:
            return
        await self._scrape()
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> EngineSamples | None:
        """Stop sampling, take the last sample, parse them all; None when the engine names nothing to sample."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if not self.is_active:
            return None
        await self._scrape()
        self.samples = build_samples(self.engine, self.interval_s, self._scrapes, self._scrape_ms, self._failures)
        return self.samples

    async def __aenter__(self) -> MetricsSampler:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
