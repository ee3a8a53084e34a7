"""Prompts of exactly `input_len` tokens, unique per request and per run, measured by the server.

Each prompt opens with a run nonce and the request index, so no two requests of any run share a
prefix-cache block (prefix caching would flatter TTFT and throughput). The body is seeded filler
words. Lengths are calibrated with the server's own tokenizer (`POST /tokenize`, `/detokenize`, as
`vllm bench serve` aligns its random prompts); the run later checks `usage.prompt_tokens` as well.

A server whose `/tokenize` is there but broken (`TokenizeFailed`: SGLang 0.5.17 answers HTTP 500 for a tokenizer
whose model_max_length overflows its JSON encoder) still serves: its prompts are counted with the
`usage.prompt_tokens` of a 1-token completion of the same text (exactly what the measured requests are billed),
and each Prompt says how it was counted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

from ..core.contract import excerpt
from ..core.errors import EndpointError, EndpointUnreachable, TokenizeFailed
from ..io.answers import parse_json
from ..io.http import httpx_errors, json_of

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
BY_TOKENIZE = "POST /tokenize"
BY_USAGE = "usage.prompt_tokens of a 1-token completion"
# Words tried, one at a time, to close a one-token gap that a two-token filler word leaves when prompts are counted
# by usage (no token ids to cut at): short, common words a BPE vocabulary holds as one token after a space.
PAD_WORDS = ("a", "the", "of", "and", "to", "in", "is", "it")


@dataclass(frozen=True)
class Prompt:
    text: str
    tokens: int | None
    """Token count the server reported (None when the server has no /tokenize)."""
    tokenize_failed: str | None = None
    """Why the server's /tokenize was not used (its failure, in its own words): `tokens` is then BY_USAGE."""

    @property
    def counted_by(self) -> str:
        if self.tokenize_failed is not None:
            return f"{BY_USAGE} (POST /tokenize failed: {self.tokenize_failed})"
        return BY_TOKENIZE if self.tokens is not None else "estimated (the server has no /tokenize)"


def _filler(seed: str, n_words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


async def _tokenize(client: httpx.AsyncClient, model: str, text: str, endpoint: str,
                    add_special_tokens: bool = True) -> list[int] | None:
    """The server's token ids of `text`; None when it has no /tokenize (404, 405, 501); TokenizeFailed when it has
    one that answered something else (a transport failure stays EndpointError: the server is not answering)."""
    with httpx_errors(f"[{endpoint}] POST /tokenize"):
        response = await client.post("/tokenize", json={"model": model, "prompt": text,
                                                        "add_special_tokens": add_special_tokens})
    if response.status_code in (404, 405, 501):
        return None
    if response.status_code != 200:
        raise TokenizeFailed(f"[{endpoint}] POST /tokenize: HTTP {response.status_code}: {excerpt(response.text)}")
    try:
        tokens = parse_json(response.text, f"[{endpoint}] POST /tokenize")["tokens"]
    except (EndpointError, KeyError, TypeError) as error:
        raise TokenizeFailed(f"[{endpoint}] POST /tokenize: HTTP 200 without token ids "
                             f"({type(error).__name__}): {excerpt(response.text)}") from None
    if not isinstance(tokens, list):
        raise TokenizeFailed(f"[{endpoint}] POST /tokenize: `tokens` is not a list: {excerpt(response.text)}")
    return list(tokens)


async def usage_tokens(client: httpx.AsyncClient, model: str, text: str, endpoint: str, *,
                       resend_on_reset: bool = False) -> int:
    """`text`'s prompt tokens as the server bills them: `usage.prompt_tokens` of a 1-token completion of it.
    `resend_on_reset`: the first count after a failed /tokenize, sent again once if its connection was reset (a
    server whose /tokenize raised may close that connection after its 500: SGLang 0.5.17's uvicorn did)."""
    body = {"model": model, "prompt": text, "max_tokens": 1, "temperature": 0}
    try:
        with httpx_errors(f"[{endpoint}] POST /v1/completions"):
            response = await client.post("/v1/completions", json=body)
    except EndpointUnreachable:
        if not resend_on_reset:
            raise
        return await usage_tokens(client, model, text, endpoint)
    data = json_of(response, endpoint=endpoint, method="POST", path="/v1/completions")
    count = (data.get("usage") or {}).get("prompt_tokens") if isinstance(data, dict) else None
    if not isinstance(count, int) or isinstance(count, bool):
        raise EndpointError(f"[{endpoint}] POST /v1/completions: no usage.prompt_tokens to count the prompt with: "
                            f"{excerpt(str(data))}")
    return count


async def _detokenize(client: httpx.AsyncClient, model: str, tokens: list[int], endpoint: str) -> str:
    response = await client.post("/detokenize", json={"model": model, "tokens": tokens})
    if response.status_code != 200:
        raise EndpointError(f"[{endpoint}] POST /detokenize: HTTP {response.status_code}: {response.text[:300]!r}")
    what = f"[{endpoint}] POST /detokenize"
    data = parse_json(response.text, what)
    if not isinstance(data, dict) or "prompt" not in data:
        raise EndpointError(f"{what}: HTTP 200 without a `prompt`: {excerpt(response.text)}")
    return str(data["prompt"])


async def build_prompt(client: httpx.AsyncClient, *, model: str, input_len: int, nonce: str, index: int,
                       endpoint: str, tokenize_failed: str | None = None) -> Prompt:
    """One prompt of exactly `input_len` server tokens (or the closest estimate without /tokenize).

    `tokenize_failed`: why the server's /tokenize is not used (an earlier prompt of the run found it broken):
    the prompt is counted by usage at once. A /tokenize that fails here does the same."""
    head = f"[{nonce}-{index}]"
    seed = f"{nonce}/{index}"
    if tokenize_failed is not None:
        return await _build_by_usage(client, model=model, input_len=input_len, head=head, seed=seed,
                                     endpoint=endpoint, why=tokenize_failed)
    full = f"{head} {_filler(seed, input_len)}"  # every filler word is at least one token: long enough
    try:
        tokens = await _tokenize(client, model, full, endpoint, add_special_tokens=False)
    except TokenizeFailed as error:
        return await _build_by_usage(client, model=model, input_len=input_len, head=head, seed=seed,
                                     endpoint=endpoint, why=str(error), fresh=True)
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


async def _build_by_usage(client: httpx.AsyncClient, *, model: str, input_len: int, head: str, seed: str,
                          endpoint: str, why: str, fresh: bool = False) -> Prompt:
    """`head` and seeded filler words counted by usage (no token ids to cut at): the word count is stepped by the
    tokens missing until the prompt is `input_len` tokens; a filler word of two tokens can leave a one-token gap,
    which one of PAD_WORDS closes. More words never mean fewer tokens (the filler of n+1 words extends that of n)."""
    def text(n: int) -> str:
        return f"{head} {_filler(seed, n)}"

    first = [fresh]  # the first count right after /tokenize failed may find its connection closed

    async def count(t: str) -> int:
        resend, first[0] = first[0], False
        return await usage_tokens(client, model, t, endpoint, resend_on_reset=resend)

    # `fewer`: the most words known to come out short of input_len (and their count); `more`: the fewest known long
    n, fewer, fewer_count, more = max(1, input_len - 8), 0, 0, None
    for _ in range(MAX_CALIBRATION_STEPS):
        got = await count(text(n))
        if got == input_len:
            return Prompt(text=text(n), tokens=got, tokenize_failed=why)
        if got < input_len:
            if n > fewer:
                fewer, fewer_count = n, got
        else:
            more = n if more is None else min(more, n)
        if more is not None and more - fewer <= 1:
            break
        step = n + (input_len - got)
        n = step if fewer < step and (more is None or step < more) else (fewer + (more or fewer + 2)) // 2
    gap = input_len - fewer_count
    if fewer and gap <= 3:
        for pad in PAD_WORDS:
            candidate = text(fewer) + f" {pad}" * gap
            if await count(candidate) == input_len:
                return Prompt(text=candidate, tokens=input_len, tokenize_failed=why)
    raise EndpointError(f"[{endpoint}] could not build a prompt of exactly {input_len} tokens counted by usage "
                        f"in {MAX_CALIBRATION_STEPS} steps (POST /tokenize failed: {why})")


async def build_prompts(client: httpx.AsyncClient, *, model: str, input_len: int, nonce: str, count: int,
                        endpoint: str, first_index: int = 0) -> list[Prompt]:
    """`count` unique prompts (indices first_index..), calibrated one after another (cheap requests). Once one
    finds /tokenize broken, the rest are counted by usage without asking it again."""
    prompts: list[Prompt] = []
    failed: str | None = None
    for i in range(first_index, first_index + count):
        prompt = await build_prompt(client, model=model, input_len=input_len, nonce=nonce, index=i,
                                    endpoint=endpoint, tokenize_failed=failed)
        failed = failed or prompt.tokenize_failed
        prompts.append(prompt)
    return prompts



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

        try:
            probe = await _tokenize(client, model, "river", endpoint, add_special_tokens=False)
        except TokenizeFailed:  # words, not exact: callers then calibrate per prompt, by usage (build_prompts)
            return cls(input_len, list(WORDS), list(WORDS), input_len, exact=False)
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
