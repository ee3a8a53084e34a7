"""Lying event streams (issue 42.2, 42.3): SYNTHESIZED OpenAI-style streams, honest ones shaped as vLLM 0.32 and
SGLang 0.5 send them, and each class of lie a server, a proxy or a patched engine can tell with one.

A shape is a function `(form, n) -> list[str]` of `data:` payloads for a stream that generated `n` tokens, in the
completions form (`text`) or the chat form (`delta.content`); `render` makes its bytes. `HONEST` must read as
`n` tokens everywhere; every entry of `LIES` must fail every reader, naming `said` (a fragment of the reason).

    events = LIES["done-first"].events("completion", 8)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

MAX_TOKENS = 64
"""The max_tokens every stream here was asked with (the lies at x10 pass it; the honest ones stay under it)."""
WORDS = [" alpha", " beta", " gamma", " delta", " eps", " zeta", " eta", " theta", " iota", " kappa", " lam", " mu"]


def _choice(form: str, text: str, finish: str | None = None, index: int = 0) -> dict:
    if form == "chat":
        return {"index": index, "delta": {"content": text} if text else {}, "finish_reason": finish}
    return {"index": index, "text": text, "logprobs": None, "finish_reason": finish, "stop_reason": None}


def _chunk(form: str, text: str, finish: str | None = None) -> str:
    kind = "chat.completion.chunk" if form == "chat" else "text_completion"
    return json.dumps({"id": "cmpl-42", "object": kind, "created": 1, "model": "smollm2",
                       "choices": [_choice(form, text, finish)]})


def _usage(tokens: int, prompt: int = 7) -> str:
    usage = {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}
    return json.dumps({"id": "cmpl-42", "object": "text_completion", "created": 1, "model": "smollm2", "choices": [],
                       "usage": usage})


def token_chunks(form: str, n: int, per_chunk: int = 1, text: Callable[[int], str] | None = None) -> list[str]:
    """`n` tokens in chunks of `per_chunk` (speculative decoding sends several), the last with finish_reason."""
    word = text or (lambda i: WORDS[i % len(WORDS)])
    out = []
    for start in range(0, n, per_chunk):
        last = start + per_chunk >= n
        out.append(_chunk(form, "".join(word(i) for i in range(start, min(n, start + per_chunk))),
                          "length" if last else None))
    return out


def honest(form: str, n: int, per_chunk: int = 1) -> list[str]:
    chunks = token_chunks(form, n, per_chunk)
    if form == "chat":  # vLLM and SGLang open a chat stream with the role and empty content
        chunks.insert(0, json.dumps({"id": "cmpl-42", "object": "chat.completion.chunk", "model": "smollm2",
                                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                  "finish_reason": None}]}))
    return [*chunks, _usage(n), "[DONE]"]


@dataclass(frozen=True)
class Shape:
    events: Callable[[str, int], list[str]]
    said: str = ""
    """A fragment every reader's reason names (lies only)."""


HONEST: dict[str, Shape] = {
    "one-token-chunks": Shape(honest),
    "speculative-3-per-chunk": Shape(lambda form, n: honest(form, n, per_chunk=3)),
    "an-empty-finish-chunk": Shape(lambda form, n: [*token_chunks(form, n)[:-1], _chunk(form, WORDS[(n - 1) % 12]),
                                                    _chunk(form, "", "stop"), _usage(n), "[DONE]"]),
    "a-repeated-token": Shape(lambda form, n: [*(_chunk(form, " the") for _ in range(n - 1)),
                                               _chunk(form, " the", "length"), _usage(n), "[DONE]"]),
    "continuous-usage": Shape(lambda form, n: [*(c[:-1] + f', "usage": {{"completion_tokens": {i + 1}}}}}'
                                                 for i, c in enumerate(token_chunks(form, n))), _usage(n), "[DONE]"]),
}
"""Honest controls: what vLLM and SGLang really send (1 token a chunk; 3 under speculative decoding; a last chunk
with only the finish reason; the same token twice, byte-identical; usage on every chunk)."""

LIES: dict[str, Shape] = {
    "done-first": Shape(lambda form, n: ["[DONE]", *honest(form, n)[:-1]], "after data: [DONE]"),
    "done-in-the-middle": Shape(lambda form, n: [*token_chunks(form, n)[: n // 2], "[DONE]",
                                                 *token_chunks(form, n)[n // 2:], _usage(n), "[DONE]"],
                                "after data: [DONE]"),
    "done-twice": Shape(lambda form, n: [*honest(form, n), "[DONE]"], "after data: [DONE]"),
    "no-done": Shape(lambda form, n: honest(form, n)[:-1], "without data: [DONE]"),
    "content-after-finish": Shape(lambda form, n: [_chunk(form, " early", "stop"), *honest(form, n)],
                                  "had finished"),
    "a-second-finish": Shape(lambda form, n: [*token_chunks(form, n), _chunk(form, "", "stop"), _usage(n),
                                              "[DONE]"], "second finish_reason"),
    "usage-x10": Shape(lambda form, n: [*token_chunks(form, n), _usage(10 * n), "[DONE]"],
                       "above the request's max_tokens"),
    "usage-x4-in-one-byte-chunks": Shape(lambda form, n: [*token_chunks(form, n, text=lambda i: "x"), _usage(4 * n),
                                                          "[DONE]"], "could carry"),
    "usage-halved": Shape(lambda form, n: [*token_chunks(form, n), _usage(n // 2), "[DONE]"],
                          "below the"),
    "duplicated-chunks": Shape(lambda form, n: [*(c for c in token_chunks(form, n)[:-1] for _ in (0, 1)),
                                                token_chunks(form, n)[-1], _usage(n), "[DONE]"], "below the"),
    "negative-usage": Shape(lambda form, n: [*token_chunks(form, n), _usage(-5), "[DONE]"], "negative"),
    "usage-a-string": Shape(lambda form, n: [*token_chunks(form, n), _usage(n).replace(f'"completion_tokens": {n}',
                                                                                      f'"completion_tokens": "{n}"'),
                                             "[DONE]"], "not a token count"),
    "usage-a-float": Shape(lambda form, n: [*token_chunks(form, n), _usage(n).replace(f'"completion_tokens": {n}',
                                                                                     f'"completion_tokens": {n}.0'),
                                            "[DONE]"], "not a token count"),
    "usage-that-falls": Shape(lambda form, n: [*(c[:-1] + f', "usage": {{"completion_tokens": {4 * (i + 1)}}}}}'
                                                 for i, c in enumerate(token_chunks(form, n))), _usage(n), "[DONE]"],
                              "fell from"),
}
"""Each lie: [DONE] before the content, in the middle, twice; no [DONE]; output after a finish reason; a second
finish reason; usage inflated (x10: above max_tokens; x4: more tokens than bytes arrived), halved, or made
negative; every chunk sent twice; (round two) usage a string or a float (which a client reads some way), and a
running usage that falls (4 per chunk, then the true total at the end)."""


def render(events: list[str], *, crlf: bool = False) -> bytes:
    """The events' bytes as a server writes them (`data: <payload>` and a blank line)."""
    end = "\r\n" if crlf else "\n"
    return "".join(f"data: {e}{end}{end}" for e in events).encode()
