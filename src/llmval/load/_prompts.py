"""Prompts of exactly `input_len` tokens, unique per request and per run, measured by the server.

Each prompt opens with a run nonce and the request index, so no two requests of any run share a
prefix-cache block (prefix caching would flatter TTFT and throughput). The body is seeded filler
words. Lengths are calibrated with the server's own tokenizer (`POST /tokenize`, `/detokenize`, as
`vllm bench serve` aligns its random prompts); the run later checks `usage.prompt_tokens` as well.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

from ..core.errors import EndpointError
from ..io.http import httpx_errors

_WORD_TEXT = (
    "river stone paper light garden window market silver orange winter yellow forest simple engine "
    "bridge coffee planet signal rocket button travel ladder number pocket circle kitten summer "
    "island harbor violet thunder pencil candle marble copper velvet meadow canyon lantern compass "
    "anchor falcon glacier horizon journal kernel lemon mirror needle oyster puzzle quartz saddle "
    "timber umbrella valley walnut zebra apple basket cabin dragon feather ginger hammer igloo jacket "
    "ketchup ladle magnet napkin orchard parrot quiver ribbon shovel tunnel vessel wagon yogurt "
    "acorn blossom cactus dolphin ember fossil goblet hazel ivory jungle koala lilac mango nectar"
)
WORDS = tuple(_WORD_TEXT.split())
MAX_CALIBRATION_STEPS = 12


@dataclass(frozen=True)
class Prompt:
    text: str
    tokens: int | None
    """Token count the server's /tokenize reported (None when the server has no /tokenize)."""


def _filler(seed: str, n_words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


async def _tokenize(client: httpx.AsyncClient, model: str, text: str, endpoint: str,
                    add_special_tokens: bool = True) -> list[int] | None:
    with httpx_errors(f"[{endpoint}] POST /tokenize"):
        response = await client.post("/tokenize", json={"model": model, "prompt": text,
                                                        "add_special_tokens": add_special_tokens})
    if response.status_code in (404, 405, 501):
        return None
    if response.status_code != 200:
        raise EndpointError(f"[{endpoint}] POST /tokenize: HTTP {response.status_code}: {response.text[:300]!r}")
    return list(response.json()["tokens"])


async def _detokenize(client: httpx.AsyncClient, model: str, tokens: list[int], endpoint: str) -> str:
    response = await client.post("/detokenize", json={"model": model, "tokens": tokens})
    if response.status_code != 200:
        raise EndpointError(f"[{endpoint}] POST /detokenize: HTTP {response.status_code}: {response.text[:300]!r}")
    return str(response.json()["prompt"])


async def build_prompt(client: httpx.AsyncClient, *, model: str, input_len: int, nonce: str, index: int,
                       endpoint: str) -> Prompt:
    """One prompt of exactly `input_len` server tokens (or the closest estimate without /tokenize)."""
    head = f"[{nonce}-{index}]"
    seed = f"{nonce}/{index}"
    full = f"{head} {_filler(seed, input_len)}"  # every filler word is at least one token: long enough
    tokens = await _tokenize(client, model, full, endpoint, add_special_tokens=False)
    if tokens is None:
        return Prompt(text=f"{head} {_filler(seed, max(1, input_len - 8))}", tokens=None)
    specials = len(await _tokenize(client, model, full, endpoint) or tokens) - len(tokens)
    target = input_len - specials
    if target < 4:
        raise EndpointError(f"[{endpoint}] input_len {input_len} is too short for a unique prompt "
                            f"({specials} special tokens; at least {specials + 4} needed)")
    cut, count = target, 0
    for _ in range(MAX_CALIBRATION_STEPS):
        text = await _detokenize(client, model, tokens[:cut], endpoint)
        count = len(await _tokenize(client, model, text, endpoint, add_special_tokens=False) or [])
        if count == target:
            return Prompt(text=text, tokens=count + specials)
        cut += target - count  # re-encoding merged or split tokens at the cut: step again
        cut = max(1, min(cut, len(tokens)))
    raise EndpointError(f"[{endpoint}] could not build a prompt of exactly {input_len} tokens with the server's "
                        f"/tokenize in {MAX_CALIBRATION_STEPS} steps (last: {count + specials})")


async def build_prompts(client: httpx.AsyncClient, *, model: str, input_len: int, nonce: str, count: int,
                        endpoint: str, first_index: int = 0) -> list[Prompt]:
    """`count` unique prompts (indices first_index..), calibrated one after another (cheap requests)."""
    return [await build_prompt(client, model=model, input_len=input_len, nonce=nonce, index=i, endpoint=endpoint)
            for i in range(first_index, first_index + count)]



class WordPrompts:
    """Unique prompts of exactly `input_len` server tokens, from a few `/tokenize` calls at creation, not per prompt.

    Words that the server's tokenizer encodes as one token (" river" with its space, and the first word without)
    are found once; a prompt is then `input_len - specials` such words drawn per prompt (seeded by nonce and
    index, so no two prompts share a prefix-cache block): a byte-level BPE never merges across a space-led
    word. Four prompts are checked with `/tokenize` at creation; if one is off, `exact` is False and callers
    use the per-prompt calibration (`build_prompts`). Without `/tokenize` (e.g. the calibration source, which
    counts whitespace words) a prompt is `input_len` words.

        maker = await WordPrompts.create(client, model="smollm2", input_len=128, endpoint="local")
        texts = maker.texts(nonce="a1b2", count=64)
    """

    def __init__(self, input_len: int, first: list[str], rest: list[str], n_words: int, exact: bool):
        self.input_len, self.first, self.rest, self.n_words, self.exact = input_len, first, rest, n_words, exact

    @classmethod
    async def create(cls, client: httpx.AsyncClient, *, model: str, input_len: int, endpoint: str) -> WordPrompts:
        import asyncio

        probe = await _tokenize(client, model, "river", endpoint, add_special_tokens=False)
        if probe is None:
            return cls(input_len, list(WORDS), list(WORDS), input_len, exact=True)
        specials = len(await _tokenize(client, model, "river", endpoint) or probe) - len(probe)
        spaced = await asyncio.gather(*(_tokenize(client, model, " " + w, endpoint, add_special_tokens=False)
                                        for w in WORDS))
        bare = await asyncio.gather(*(_tokenize(client, model, w, endpoint, add_special_tokens=False)
                                      for w in WORDS))
        rest = [w for w, t in zip(WORDS, spaced, strict=True) if t is not None and len(t) == 1]
        first = [w for w, t in zip(WORDS, bare, strict=True) if t is not None and len(t) == 1 and w in rest]
        maker = cls(input_len, first, rest, input_len - specials, exact=False)
        if len(rest) >= 16 and first and maker.n_words >= 4:
            checks = await asyncio.gather(*(_tokenize(client, model, text, endpoint)
                                            for text in maker.texts("check", 4)))
            maker.exact = all(c is not None and len(c) == input_len for c in checks)
        return maker

    def texts(self, nonce: str, count: int, first_index: int = 0) -> list[str]:
        out = []
        for i in range(first_index, first_index + count):
            rng = random.Random(f"{nonce}/{i}")
            out.append(" ".join([rng.choice(self.first)] + [rng.choice(self.rest) for _ in range(self.n_words - 1)]))
        return out
