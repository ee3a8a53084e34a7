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

from ..errors import EndpointError

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
    try:
        response = await client.post("/tokenize", json={"model": model, "prompt": text,
                                                        "add_special_tokens": add_special_tokens})
    except httpx.HTTPError as error:
        raise EndpointError(f"[{endpoint}] POST /tokenize: {type(error).__name__}: {error}") from error
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
