"""Seeded prompts fitted to a token budget, for any grid: stable seeds, the prompt's identity, the fit.

A grid's prompts are drawn from `random.Random(derive_seed(...))` (never `hash()`, the clock or file order),
so a cell asks the same question on every machine, every night; `prompt_sha256` is the prompt's identity
kept with its result; `fit_units` finds how much of a seeded stream (haystack words, agent steps) fits a
cell's budget under the server's own tokenizer.

>>> fit_units(lambda n: 10 + 3 * n, target=100, n_max=1000)
(30, 100)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from ..core.errors import LlmvalError

TokenCounter = Callable[[list[dict]], int]
"""Counts the prompt tokens of a chat request's messages (chat template included)."""


class BudgetError(LlmvalError):
    """The token budget cannot hold even the empty prompt, or the haystack stream is too short."""


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from its parts, stable across processes and machines (unlike `hash()`)."""
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def prompt_sha256(messages: list[dict]) -> str:
    """SHA-256 of the messages as canonical JSON: the identity of a prompt across runs."""
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def fit_units(count: Callable[[int], int], target: int, n_max: int) -> tuple[int, int]:
    """The largest `n` in [0, n_max] with `count(n) <= target`, and that count.

    `count` is assumed non-decreasing (more haystack, more tokens). The bracket comes from a linear
    estimate, then bisection; each probe is one tokenizer call, memoised.
    """
    memo: dict[int, int] = {}

    def c(n: int) -> int:
        if n not in memo:
            memo[n] = count(n)
        return memo[n]

    if c(0) > target:
        raise BudgetError(f"the prompt without any haystack already has {c(0)} tokens; the budget is {target}")
    if n_max == 0:
        return 0, c(0)
    probe = min(n_max, 256)
    rate = max((c(probe) - c(0)) / probe, 1e-3)
    guess = min(n_max, max(1, int((target - c(0)) / rate)))
    step = max(2, guess // 64)
    if c(guess) <= target:  # gallop up until the budget is crossed (or the stream ends)
        lo = guess
        while True:
            nxt = min(n_max, lo + step)
            if nxt == lo:
                return lo, c(lo)
            if c(nxt) > target:
                hi = nxt
                break
            lo, step = nxt, step * 2
    else:  # gallop down; c(0) fits, so this ends
        hi = guess
        while True:
            nxt = max(0, hi - step)
            if c(nxt) <= target:
                lo = nxt
                break
            hi, step = nxt, step * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if c(mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo, c(lo)
