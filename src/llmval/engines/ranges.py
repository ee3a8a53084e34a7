"""The physical range of every figure the suite computes from an engine's own metrics, in one table.

A ratio of the engine's counters, or a gauge it reports as a share, can only take some values: a hit rate is a part
of what was looked up (0 to 1), a speculative step emits its own token plus at most every draft token (1 to
1 + draft tokens), a counter only grows. A figure outside its range was not measured: the engine restarted
between two scrapes, a proxy mixed two servers, or the metrics lie. It is never judged against a gate (a hit rate
of 300 % is no pass of a 50 % floor); the check is could-not-check (`ImpossibleMetric`), naming the figure, its
value, its range and the values it was computed from.

    >>> print(out_of_range("prefix_cache_hit_rate", 3.0, values="900 of 300 tokens"))  # doctest: +ELLIPSIS
    prefix-cache hit rate 3 (900 of 300 tokens) is outside its physical range 0..1: hit tokens are a part of ...
    >>> out_of_range("spec_accept_length", 2.4, high=accept_length_ceiling(num_steps=2)) is None
    True

Every computation of such a figure reads its range here (`CacheHits` and `Acceptance`, whichever engine computed
them; the perf windows' counter deltas and their sampled gauges and counters, `GAUGE_RANGES`):
`selftest/engines/test_ranges.py` feeds each one an impossible value. (Streamed tokens per chunk above 1 + draft
tokens is the speculative check's own finding, `llmval.load.speculative`: counted by the client, judged RED.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.errors import LlmvalError


class ImpossibleMetric(LlmvalError):
    """A figure computed from the engine's own metrics is outside its physical range: it measures nothing."""


@dataclass(frozen=True)
class PhysicalRange:
    """Where one figure can be: `low` to `high` (None: bounded only by the deployment's configuration, given when
    the figure is checked, e.g. the draft tokens of a speculative step)."""

    what: str
    low: float
    high: float | None
    why: str
    unset: float | None = None
    """A value the engine reports before it has measured anything (SGLang's spec_accept_length gauge reads 0.0
    until its first speculative decode log): no measurement, and no impossible one either."""

    def describe(self, high: float | None = None) -> str:
        top = self.high if self.high is not None else high
        return f"{self.low:g}..{'unbounded' if top is None else f'{top:g}'}"


RANGES: dict[str, PhysicalRange] = {
    "prefix_cache_hit_rate": PhysicalRange("prefix-cache hit rate", 0.0, 1.0,
                                           "hit tokens are a part of the prompt tokens looked up"),
    "kv_cache_usage": PhysicalRange("KV-cache usage", 0.0, 1.0, "a share of the KV-cache blocks (token slots)"),
    "spec_acceptance_rate": PhysicalRange("speculative acceptance rate", 0.0, 1.0,
                                          "accepted draft tokens are a part of the draft tokens proposed"),
    "spec_accept_length": PhysicalRange("speculative acceptance length", 1.0, None,
                                        "a verify step emits its one target token plus at most every draft token "
                                        "(1 + draft tokens per step)"),
    "spec_accept_length_gauge": PhysicalRange("speculative acceptance length gauge", 1.0, None,
                                              "a verify step emits its one target token plus at most every draft "
                                              "token; 0 is the gauge before the first speculative step", unset=0.0),
    "counter_growth": PhysicalRange("counter growth between two scrapes", 0.0, math.inf,
                                    "a Prometheus counter only grows (a drop: the engine restarted between the "
                                    "scrapes, or another server answered one of them)"),
    "counter_value": PhysicalRange("counter value", 0.0, math.inf, "a Prometheus counter starts at 0 and only grows"),
    "gauge_count": PhysicalRange("request count", 0.0, math.inf, "requests running or waiting cannot be negative"),
    "generation_beyond_own": PhysicalRange(
        "generation counter growth beyond this run's own tokens", 0.0, math.inf,
        "the engine counts every token it generates, this run's streamed ones among them: a counter that grew by less "
        "was reset between the scrapes (the engine restarted) or counts for another server"),
}
"""figure key -> its physical range. A new ratio or share the adapters compute gets its line here."""


def accept_length_ceiling(*, num_steps: int | None = None, num_draft_tokens: int | None = None) -> float | None:
    """The most tokens one speculative step can emit: its one target token plus at most `num_steps` accepted draft
    tokens (vLLM's num_speculative_tokens; SGLang's speculative_num_steps, the depth of its draft tree, whatever its
    topk); where no step count is known or it is 0 (SGLang's NGRAM reports 0), 1 + `num_draft_tokens` (the tokens
    the drafter proposes, the verified root among them: one more than can be accepted). None when neither is known.

    >>> accept_length_ceiling(num_steps=2), accept_length_ceiling(num_steps=3, num_draft_tokens=8)
    (3, 4)
    >>> accept_length_ceiling(num_steps=0, num_draft_tokens=8), accept_length_ceiling() is None
    (9, True)
    """
    def known(n: int | None) -> bool:
        return isinstance(n, int) and not isinstance(n, bool) and n >= 1

    if known(num_steps):
        return 1 + num_steps  # type: ignore[operator]
    return 1 + num_draft_tokens if known(num_draft_tokens) else None  # type: ignore[operator]


def out_of_range(key: str, value: float | None, *, high: float | None = None, values: str = "") -> str | None:
    """Why `value` of figure `key` cannot be (naming it, its value, its range and `values` it was computed from);
    None when it is within its range, or absent. `high` bounds a figure the table leaves to the configuration."""
    bound = RANGES[key]
    if value is None or value == bound.unset:
        return None
    top = bound.high if bound.high is not None else high
    if math.isfinite(value) and value >= bound.low and (top is None or value <= top):
        return None
    given = f" ({values})" if values else ""
    return (f"{bound.what} {value:g}{given} is outside its physical range {bound.describe(high)}: {bound.why}")


def outside_ranges(figures: list[tuple[str, float | None, str]], *, high: float | None = None) -> str:
    """The reasons of every figure `(key, value, values)` outside its range, joined; "" when all are within."""
    found = [why for key, value, values in figures if (why := out_of_range(key, value, high=high, values=values))]
    return "; ".join(found)
