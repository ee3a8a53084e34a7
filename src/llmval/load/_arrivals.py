"""When the requests of a run arrive: seeded arrival schedules, absolute from the run's start.

`vllm bench serve --request-rate R` (burstiness 1) draws exponential gaps of mean 1/R between request
arrivals; the requests then pass the concurrency cap (if any) and are timed from there. Offsets here are
absolute from the run's start (a cumulative sum drawn once, seeded), so a slow client never stretches the
schedule. The runner (`_runner`) paces a rate run by them; goodput and sweeps over rates are `_rate`'s.
"""

from __future__ import annotations

import random


def poisson_offsets(count: int, rate: float, seed: int | str) -> list[float]:
    """Arrival times (s from the start) of `count` requests at `rate` req/s; the first one at 0.

    >>> poisson_offsets(3, 1e9, 1)[0]
    0.0
    """
    if rate <= 0:
        raise ValueError(f"request rate must be positive, got {rate}")
    rng = random.Random(seed)
    offsets, at = [], 0.0
    for i in range(count):
        if i:
            at += rng.expovariate(rate)
        offsets.append(at)
    return offsets


def vllm_offsets(count: int, rate: float, seed: int | str, burstiness: float = 1.0) -> list[float]:
    """Arrival times as `vllm bench serve --request-rate R --burstiness B` draws them (`get_request`): gamma gaps
    of mean 1/R (B = 1: Poisson), the first gap included, summed, then rescaled so the last arrival lands
    exactly at count/R (so the offered rate is R for any seed).

    >>> offsets = vllm_offsets(4, 2.0, 1)
    >>> round(offsets[-1], 9), offsets == sorted(offsets)
    (2.0, True)
    """
    if rate <= 0 or burstiness <= 0:
        raise ValueError(f"request rate and burstiness must be positive, got {rate}, {burstiness}")
    rng = random.Random(seed)
    offsets, at = [], 0.0
    for _ in range(count):
        at += rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
        offsets.append(at)
    if offsets and offsets[-1] > 0:
        scale = (count / rate) / offsets[-1]
        offsets = [o * scale for o in offsets]
    return offsets
