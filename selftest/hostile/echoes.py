"""Servers that answer without retrieving (issue 42.1): SYNTHESIZED vLLM-shaped chat answers to a NIAH question,
honest or not, for the HostileServer (`chat_route`) and for an httpx MockTransport (`answer_for`).

Styles (what the 'model' answers to a prompt whose needle says `... for <key> is: <value>.`):

- honest: `needle` (one sentence with the value), `quoting` (repeats the question and the needle's sentence,
  two dozen words copied from the prompt: what a verbose honest model does);
- lies: `echo` (the prompt itself), `echo-usage-small` (the prompt, usage claiming 9 tokens), `tail` (the last 40
  words of the haystack before the question, with the needle's sentence in front of them), `answer-and-haystack` (the
  right sentence, then 80 words of haystack), `usage-x10` (the right sentence, usage 10 x max_tokens), `overlong`
  (the right sentence, then 100 words of the model's own, usage claiming 12 tokens), `echo-without-spaces` (the
  prompt with its whitespace turned into `_`: one word, no run of words copied, usage claiming 40 tokens),
  `needle-region-without-spaces` (240 words around the needle joined with no space: one 'word' per sentence, too
  few characters for the length rules; round two).

The stand-in /tokenize counts whitespace pieces (`llmval.needle.whitespace_token_count`), not any real tokenizer.
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler

from llmval.needle import whitespace_token_count
from selftest.hostile.server import Route, answer

QUESTION_RE = re.compile(r"special magic \w+ for (?P<key>[\w-]+) mentioned")
HONEST = ("needle", "quoting")
LIES = {
    "echo": "repeats the prompt",
    "echo-usage-small": "words",
    "tail": "repeats the prompt",
    "answer-and-haystack": "repeats the prompt",
    "usage-x10": "above max_tokens",
    "overlong": "words",
    "echo-without-spaces": "characters",
    "needle-region-without-spaces": "letters and digits",
}
"""Each lie and a fragment of the reason the cell must name."""


def answer_for(style: str, body: dict) -> tuple[str, dict]:
    """(content, usage) of the 'model' in `style` for a chat request `body`."""
    content = "\n".join(str(m["content"]) for m in body["messages"])
    key = QUESTION_RE.search(content)["key"]
    value = re.search(rf"for {re.escape(key)} is: (\S+)\.", content)[1]
    sentence = f"The special magic number for {key} is {value}."
    prompt_tokens = whitespace_token_count(body["messages"])
    max_tokens = body.get("max_tokens", 64)
    words = content.split()
    text, tokens = sentence, len(sentence.split()) + 2
    if style == "quoting":  # the question and the needle's sentence, verbatim: 24 words copied
        question = re.search(r"What is the special magic [^?]*\?", content)[0]
        needle = re.search(rf"One of the special magic \w+ for {re.escape(key)} is: \S+\.", content)[0]
        text = f"{question} The text says: {needle} So the answer is {value}."
        tokens = 3 * len(text.split()) // 2
    elif style in ("echo", "echo-usage-small"):
        text, tokens = content, (9 if style == "echo-usage-small" else prompt_tokens)
    elif style == "tail":
        before = content[:QUESTION_RE.search(content).start()].split()
        text = f"{sentence} {' '.join(before[-40:])}"
        tokens = 2 * len(text.split())
    elif style == "answer-and-haystack":
        text = f"{sentence} {' '.join(words[len(words) // 3:len(words) // 3 + 80])}"
        tokens = min(max_tokens, 2 * len(text.split()))
    elif style == "usage-x10":
        tokens = 10 * max_tokens
    elif style == "echo-without-spaces":
        text, tokens = "_".join(words), 40
    elif style == "needle-region-without-spaces":  # round two: 240 words around the needle, spaces taken out
        at = next(i for i, w in enumerate(words) if w == f"{value}.")
        text, tokens = "".join(words[max(0, at - 120):at + 120]), min(max_tokens, 60)
    elif style == "overlong":
        text, tokens = sentence + " Moreover" * 100, 12
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens, "total_tokens": prompt_tokens + tokens}
    return text, usage


def chat_route(style: str) -> Route:
    """/v1/chat/completions answering in `style` (non-streamed, as the NIAH grid asks)."""

    def route(request: BaseHTTPRequestHandler) -> None:
        body = json.loads(request.rfile.read(int(request.headers.get("Content-Length") or 0)))
        text, usage = answer_for(style, body)
        answer({"id": "chatcmpl-42", "object": "chat.completion", "created": 1, "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}], "usage": usage})(request)

    return route


def tokenize_route(request: BaseHTTPRequestHandler) -> None:
    body = json.loads(request.rfile.read(int(request.headers.get("Content-Length") or 0)))
    answer({"count": whitespace_token_count(body["messages"]), "max_model_len": 8192, "tokens": []})(request)
