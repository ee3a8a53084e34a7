"""Is an answer a retrieval at all? The one rule every judge of a carried fact applies before it looks for the fact:
the NIAH cells (`llmval.needle`), the agentic cells' tool call (`llmval.agentic`) and correctness under load
(`llmval.underload`).

A server that answers with the prompt itself has the needle in its answer; an answer that is the haystack, or
longer than `max_tokens` could have produced, was not generated as the question asked, so finding the value in it
proves nothing. `not_a_retrieval` says why an answer is not one ("" when it may be), from what can be counted
without the model's tokenizer:

- usage claims more completion tokens than `max_tokens` allowed;
- the answer has more words than `max_tokens` (or than usage's completion tokens): every tokenizer the engines
  serve (byte-level BPE and SentencePiece alike) splits text at whitespace before it merges, so a token never
  spans two words, and N tokens decode to at most N words;
- the answer has more characters than `max_tokens` (or usage's tokens) can decode to: whitespace dropped and
  runs of one character counted once (vocabularies hold long runs of spaces or `=`), no token of a served
  vocabulary is longer than `MAX_CHARS_PER_TOKEN` (an echo with its spaces taken out is still too long);
- the answer repeats the prompt read without word breaks: `ECHO_CHARS` of its letters and digits are in runs of
  `RUN_CHARS` copied from the prompt's letters and digits (the prompt with its spaces and punctuation taken out,
  a script written without spaces);
- the answer repeats the prompt: `ECHO_WORDS` or more of its words, or half the prompt (and at least
  `ECHO_MIN_WORDS`), are runs of at least `RUN_WORDS` words copied from the prompt (an honest answer may quote the
  needle's sentence and the question, a dozen words or two, or restate a short request; not a paragraph of
  haystack, nor a whole prompt).

    >>> not_a_retrieval("The number is 4417702.", prompt="... The number is 4417702. ...", max_tokens=64)
    ''
    >>> not_a_retrieval("x " * 100, prompt="", max_tokens=64)[:40]
    'the answer has 100 words: 64 tokens (max'
"""

from __future__ import annotations

import re

WORD_RE = re.compile(r"\w+")
RUN_WORDS = 8
"""A copied run counts from this many words in a row (shorter runs happen by chance: 'the number for the')."""
ECHO_WORDS = 32
"""Words of an answer in copied runs from which it is an echo of the prompt, whatever the prompt's length."""
MAX_CHARS_PER_TOKEN = 48
"""Characters one token decodes to at most, whitespace dropped and repeated characters counted once: the longest
such tokens of the vocabularies served here (code identifiers, CJK phrases) are under 32."""
DENSE_RE = re.compile(r"\s+|(.)\1+", re.DOTALL)
ECHO_SHARE = 0.5
"""Share of the prompt's words repeated in copied runs from which an answer is an echo (short prompts)."""
RUN_CHARS = 64
"""A copied run of letters and digits counts from this many in a row (the echo rule read without word breaks)."""
ECHO_CHARS = 256
"""Letters and digits of an answer in copied runs from which it is an echo, however its words are broken: the prompt
with its spaces and punctuation taken out, or a text whose script has none (32 words of English are ~150)."""
ECHO_MIN_WORDS = 16
"""The fewest copied words that make an echo of a short prompt (a tool call's request restated in its content,
'I will call get_weather with city Paris and unit celsius', copies 8)."""


def not_a_retrieval(answer: str, *, prompt: str, max_tokens: int | None,
                    completion_tokens: int | None = None) -> str:
    """Why `answer` (every text the model produced: content, reasoning, tool call arguments) cannot be a
    retrieval of a fact from `prompt` (the text of the messages asked); "" when it may be one."""
    if isinstance(completion_tokens, bool) or not isinstance(completion_tokens, int):
        completion_tokens = None  # no count (or junk for one): judged on the text alone
    copied, prompt_words = copied_words(answer, prompt)  # first: "an echo" says most about such a server
    if copied >= ECHO_WORDS or (prompt_words and copied >= max(ECHO_SHARE * prompt_words, ECHO_MIN_WORDS)):
        return (f"the answer repeats the prompt: {copied} of its words are runs of {RUN_WORDS}+ words copied from "
                f"the prompt ({prompt_words} words): an echo is not a retrieval")
    if (copied := copied_chars(answer, prompt)) >= ECHO_CHARS:
        return (f"the answer repeats the prompt: {copied} of its letters and digits are runs of {RUN_CHARS}+ copied "
                "from the prompt, spaces and punctuation aside: an echo is not a retrieval")
    if completion_tokens is not None and max_tokens is not None and completion_tokens > max_tokens:
        return (f"usage says {completion_tokens} completion tokens, above max_tokens {max_tokens}: not the "
                "generation the question asked for (a made-up count, or a server that ignores max_tokens)")
    words = len(answer.split())
    if max_tokens is not None and words > max_tokens:
        return (f"the answer has {words} words: {max_tokens} tokens (max_tokens) decode to at most {max_tokens} "
                "words, so it was not generated as asked (an echo of the prompt, or text from elsewhere)")
    if completion_tokens is not None and words > completion_tokens:
        return (f"the answer has {words} words, more than the {completion_tokens} completion tokens usage claims "
                "(a token never spans two words): the answer or its count was not generated as asked")
    tokens = min(t for t in (max_tokens, completion_tokens) if t is not None) \
        if max_tokens is not None or completion_tokens is not None else None
    if tokens is not None and (dense := dense_chars(answer)) > tokens * MAX_CHARS_PER_TOKEN:
        said = "max_tokens" if tokens == max_tokens else "usage's completion_tokens"
        return (f"the answer has {dense} characters (whitespace and repeats aside): {tokens} tokens ({said}) decode "
                f"to at most {tokens * MAX_CHARS_PER_TOKEN}, so it was not generated as asked")
    return ""


def dense_chars(text: str) -> int:
    """Characters of `text` with whitespace dropped and each run of one character counted once."""
    return len(DENSE_RE.sub(lambda m: m.group(1) or "", text))


def generated_text(content: str | None, reasoning: str | None = "", tool_calls: list | None = None) -> str:
    """Every text an answer produced: content, reasoning, each tool call's name and raw arguments."""
    calls = []
    for call in tool_calls or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.extend(str(v) for v in (function.get("name"), function.get("arguments")) if v)
    return "\n".join(t for t in (content or "", reasoning or "", *calls) if t)


def prompt_text(messages: list[dict]) -> str:
    """The text of a chat request's messages (contents, and prior tool calls' arguments), as the echo rule reads it."""
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
        for call in message.get("tool_calls") or ():
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            if isinstance(arguments, str):
                parts.append(arguments)
    return "\n".join(parts)


def copied_words(answer: str, prompt: str) -> tuple[int, int]:
    """(words of `answer` inside runs of at least `RUN_WORDS` words that also occur in `prompt`, words of `prompt`),
    case and punctuation aside. Memory grows with the answer, not the prompt (a haystack of a million tokens is
    scanned once)."""
    said = [w.lower() for w in WORD_RE.findall(answer)]
    if len(said) < RUN_WORDS:
        return 0, _count_words(prompt)
    wanted: dict[int, list[int]] = {}
    for start in range(len(said) - RUN_WORDS + 1):
        wanted.setdefault(hash(tuple(said[start:start + RUN_WORDS])), []).append(start)
    found: set[int] = set()
    window: list[str] = []
    prompt_words = 0
    for match in WORD_RE.finditer(prompt):
        prompt_words += 1
        window.append(match.group(0).lower())
        if len(window) > RUN_WORDS:
            del window[0]
        if len(window) == RUN_WORDS:
            starts = wanted.get(hash(tuple(window)))
            if starts:
                found.update(i for s in starts if said[s:s + RUN_WORDS] == window for i in range(s, s + RUN_WORDS))
    return len(found), prompt_words


def copied_chars(answer: str, prompt: str) -> int:
    """Letters and digits of `answer` (case, whitespace and punctuation dropped) inside runs of `RUN_CHARS` that
    occur in `prompt` read alike: `alphabravocharlie...` copied from `alpha bravo, charlie ...` is copied, though
    it has no word of the prompt. Windows start every `RUN_CHARS // 2` characters (a run of 1.5 windows holds one
    whole), each looked up by substring search: an answer shorter than `ECHO_CHARS` costs nothing."""
    said = "".join(WORD_RE.findall(answer.lower()))
    if len(said) < ECHO_CHARS:
        return 0
    text = "".join(WORD_RE.findall(prompt.lower()))
    covered: set[int] = set()
    for start in range(0, len(said) - RUN_CHARS + 1, RUN_CHARS // 2):
        if said[start:start + RUN_CHARS] in text:
            covered.update(range(start, start + RUN_CHARS))
    return len(covered)


def _count_words(text: str) -> int:
    return sum(1 for _ in WORD_RE.finditer(text))
