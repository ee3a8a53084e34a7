"""Run metrics with `vllm bench serve`'s definitions and key names (`calculate_metrics` in serve.py).

Mean, median, std and percentiles are numpy's (`np.percentile`, "linear"), as in vLLM, so
`p99_ttft_ms` here and in vLLM's result JSON mean the same number. `decode_tok_s` = 1000 / median
TPOT, the single-stream decode speed people quote; never 1000 / mean ITL (ITL is per chunk and lies
under speculative decoding).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ._request import RequestRecord

PERCENTILES = (50.0, 90.0, 99.0)


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile with linear interpolation between order statistics (`np.percentile`, as vLLM).

    >>> percentile([1, 2, 3, 4], 50)
    2.5
    """
    if not len(values):
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} is outside [0, 100]")
    return float(np.percentile(values, p))


@dataclass(frozen=True)
class Distribution:
    """mean, median, std and percentiles of one latency metric, in milliseconds."""

    mean: float
    median: float
    std: float
    percentiles: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of_seconds(cls, values: Sequence[float], percentiles: Sequence[float] = PERCENTILES) -> Distribution:
        ms = np.asarray([v * 1000 for v in values] or [0.0])  # vLLM reports 0 for an empty list (np.mean(x or 0))
        return cls(mean=float(np.mean(ms)), median=float(np.median(ms)), std=float(np.std(ms)),
                   percentiles={_pkey(p): float(np.percentile(ms, p)) for p in percentiles})


def _pkey(p: float) -> str:
    return f"p{int(p)}" if float(p).is_integer() else f"p{p}"


@dataclass(frozen=True)
class RunMetrics:
    """A run's numbers, under `vllm bench serve`'s names."""

    duration: float
    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    ttft_ms: Distribution
    tpot_ms: Distribution
    itl_ms: Distribution
    e2el_ms: Distribution
    max_concurrent_requests: int
    """vLLM's: most requests active within one 1-second bucket (a request ending and one starting in the same
    second both count)."""
    max_output_tokens_per_s: float
    """vLLM's: most chunks (ttft + ITL timestamps) within one 1-second bucket."""
    peak_in_flight: int
    """Exact most requests in flight at one instant (not a vLLM key)."""

    @property
    def decode_tok_s(self) -> float:
        """1000 / median TPOT: one stream's decode speed (0 when no request decoded)."""
        return 1000 / self.tpot_ms.median if self.tpot_ms.median > 0 else 0.0

    def as_vllm_json(self) -> dict:
        """Flat keys as in `vllm bench serve --save-result` (`p99_ttft_ms`, `median_tpot_ms`, ...)."""
        flat: dict[str, float | int] = {
            k: v for k, v in asdict(self).items() if not isinstance(v, dict)
        }
        for name in ("ttft", "tpot", "itl", "e2el"):
            dist: Distribution = getattr(self, f"{name}_ms")
            flat[f"mean_{name}_ms"] = dist.mean
            flat[f"median_{name}_ms"] = dist.median
            flat[f"std_{name}_ms"] = dist.std
            for key, value in dist.percentiles.items():
                flat[f"{key}_{name}_ms"] = value
        flat["decode_tok_s"] = self.decode_tok_s
        return flat


def compute_metrics(records: Sequence[RequestRecord], duration_s: float,
                    percentiles: Sequence[float] = PERCENTILES) -> RunMetrics:
    """vLLM's `calculate_metrics` over the measured requests of one run (warmup excluded)."""
    if duration_s <= 0:
        raise ValueError(f"run duration must be positive, got {duration_s}")
    ok = [r for r in records if r.success]
    output_tokens = [r.output_tokens or 0 for r in ok]
    tpots = [t for r in ok if (t := r.tpot_s) is not None]
    buckets = second_buckets(ok)
    return RunMetrics(
        duration=duration_s,
        completed=len(ok),
        failed=len(records) - len(ok),
        total_input_tokens=sum(r.prompt_tokens or 0 for r in ok),
        total_output_tokens=sum(output_tokens),
        request_throughput=len(ok) / duration_s,
        output_throughput=sum(output_tokens) / duration_s,
        total_token_throughput=(sum(r.prompt_tokens or 0 for r in ok) + sum(output_tokens)) / duration_s,
        ttft_ms=Distribution.of_seconds([r.ttft_s for r in ok], percentiles),
        tpot_ms=Distribution.of_seconds(tpots, percentiles),
        itl_ms=Distribution.of_seconds([gap for r in ok for gap in r.itl_s], percentiles),
        e2el_ms=Distribution.of_seconds([r.latency_s for r in ok], percentiles),
        max_concurrent_requests=buckets[1],
        max_output_tokens_per_s=buckets[0],
        peak_in_flight=max_concurrency(ok),
    )


def second_buckets(records: Sequence[RequestRecord]) -> tuple[float, int]:
    """vLLM's `max_output_tokens_per_s` and `max_concurrent_requests` (1-second buckets from the first start)."""
    if not records:
        return 0.0, 0
    first = min(r.start_time for r in records)
    last = max(r.start_time + r.latency_s for r in records)
    size = math.ceil(last - first) + 1
    tokens, active = [0] * size, [0] * size
    for r in records:
        t = r.start_time + r.ttft_s
        times = [t]
        for gap in r.itl_s:
            t += gap
            times.append(t)
        for at in times:
            bucket = int(at - first)
            if 0 <= bucket < size:
                tokens[bucket] += 1
        for second in range(int(r.start_time - first), int(r.start_time + r.latency_s - first) + 1):
            active[second] += 1
    return float(max(tokens)), max(active)


def max_concurrency(records: Sequence[RequestRecord]) -> int:
    """Most requests in flight at once (exact sweep over start/end times, not 1 s buckets)."""
    events = sorted([(r.start_time, 1) for r in records] + [(r.start_time + r.latency_s, -1) for r in records],
                    key=lambda e: (e[0], e[1]))
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak
