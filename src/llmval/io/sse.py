"""The one reading of an OpenAI-style event stream: bytes to `data:` payloads, payloads to chunks, and what a
whole stream is. Every streamed answer the suite reads passes here: the perf gates' wire client (`llmval.io.wire`),
the load's httpx path and the chat checks' joined streams (`llmval.engines.stream`).

A stream is whole when its `data:` events are JSON objects, then `data: [DONE]`, then nothing. Each of these is a
protocol fault, raised as `StreamBroken` naming it (a request that reads as a pass on a cut or doctored stream is
the lie this module exists to refuse):

- an event after `[DONE]` (the stream said it had ended: the events before it may not be the answer);
- no `[DONE]` at all (the stream may have been cut anywhere, even after a finish reason);
- output (text, content, reasoning, a tool call) or a second finish reason on a choice that already finished;
- an event that is not a JSON object, or that carries an `error` instead of choices;
- a named event (`event: error`: an OpenAI-compatible stream sends unnamed data events only);
- a usage count that is no JSON integer (`"16"`, `16.0`, `true`), or a `completion_tokens` below an earlier one.

A repeated chunk is not a fault here (an engine sends the same bytes for the same token twice in a row); what a
repeated chunk inflates is judged by the counts (`StreamCounts`: text-bearing chunks above the claimed tokens).

    reader = OpenAIStream()
    for data in SseSplitter().feed(raw_bytes):
        chunk = reader.read(data)      # the JSON object; None for [DONE]; StreamBroken for a fault
    reader.end()                       # StreamBroken when [DONE] never came

May import `llmval.core` only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..core.contract import shorten
from ..core.errors import ParseError
from ..core.jsontext import read_json

DONE = b"[DONE]"
MAX_EVENT_BYTES = 2**20
"""The longest SSE event read (a streamed chunk is a few hundred bytes, a few kB with logprobs): past it the
stream is refused rather than held and re-scanned (a server that never ends its event)."""


class StreamBroken(Exception):
    """The stream's content is not what a streamed completion sends (the message names the fault)."""


class SseSplitter:
    """Bytes of an event stream, in any chunking, to the `data:` payload of each complete event (the SSE spec:
    CRLF, CR or LF line ends; several `data:` lines join with newlines; comments and data-less events skipped)."""

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES):
        self._held = b""
        self.max_event_bytes = max_event_bytes

    def feed(self, payload: bytes) -> list[bytes]:
        sse = self._held + payload if self._held else payload
        if b"\r" in sse:  # CRLF or CR line ends (allowed by the SSE spec): normalise, keeping a trailing CR
            held = sse.endswith(b"\r")
            sse = (sse[:-1] if held else sse).replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
        if b"\n\n" not in sse:
            if len(sse) > self.max_event_bytes:
                raise StreamBroken(f"an SSE event longer than {self.max_event_bytes // 2**20} MiB: refused to read "
                                   "more")
            self._held = sse
            return []
        *events, self._held = sse.split(b"\n\n")
        found = []
        for event in events:
            if event.startswith(b"data: ") and b"\n" not in event:
                found.append(event[6:])  # the common case: one data line
                continue
            fields = event.split(b"\n")
            lines = [line[5:] for line in fields if line.startswith(b"data:")]
            if lines and (named := event_name(fields)) not in (b"", b"message"):
                raise StreamBroken(f"an SSE event named {_text(named)!r} carrying {_text(lines[0]).strip()[:200]!r}: "
                                   "an OpenAI-compatible stream sends unnamed data events only (a named one is an "
                                   "error the server reported, or another protocol)")
            if lines:  # else a comment or an event without data
                found.append(b"\n".join(line[1:] if line.startswith(b" ") else line for line in lines))
        return found

    def close(self) -> list[bytes]:
        """The stream ended: an event left without its blank line still counts (the spec drops it; a server that
        ends `data: [DONE]\\n` without the blank line is common enough that dropping it would call it cut)."""
        held, self._held = self._held.strip(b"\r\n"), b""
        return self.feed(held + b"\n\n") if held else []


def event_name(fields: list[bytes]) -> bytes:
    """The `event:` field of one SSE event's lines (b"" when it names none: the spec's default, "message")."""
    names = [line[6:].strip() for line in fields if line.startswith(b"event:")]
    return names[-1] if names else b""


def data_events(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The `data:` payloads of an event stream's bytes (`SseSplitter` over a byte iterator)."""
    splitter = SseSplitter()
    for chunk in chunks:
        yield from splitter.feed(chunk)
    yield from splitter.close()


def not_event_stream(content_type: str) -> str:
    """Why an answer with this Content-Type is not an event stream ("" when it is one)."""
    if content_type.strip().lower().startswith("text/event-stream"):
        return ""
    return f"not an SSE stream: content-type is {content_type!r}, not text/event-stream"


def choice_output(choice: dict) -> str:
    """What one streamed choice carries of the model's output: completion `text`, chat content and reasoning, tool
    call names and argument fragments (all generated tokens). The completions form returns at once: it is the
    load's hot path (one call per event)."""
    delta = choice.get("delta")
    text = choice.get("text")
    if delta is None:
        return text if isinstance(text, str) else ""
    parts = [text] if isinstance(text, str) else []
    if isinstance(delta, dict):
        for key in ("content", "reasoning_content", "reasoning"):
            if isinstance(value := delta.get(key), str):
                parts.append(value)
        for call in delta.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                parts.extend(v for v in (function.get("name"), function.get("arguments")) if isinstance(v, str))
    return "".join(parts)


@dataclass
class StreamCounts:
    """What arrived, counted beside what the stream's usage claims (`OpenAIStream.counts`)."""

    chunks: int = 0
    """Events with a non-empty `choices` list."""
    output_chunks: int = 0
    """Chunks that carried output (each carries at least one generated token)."""
    output_bytes: int = 0
    """UTF-8 bytes of the output text (a generated token that is not a special token decodes to at least one)."""
    claimed_tokens: int | None = None
    """The last `usage.completion_tokens` the stream sent (None: none)."""
    claimed_prompt_tokens: int | None = None
    is_chat: bool = False
    """The chat form (`delta`): a template's markup (`<think></think>`, a stop sequence) may be generated and never
    streamed, so its ceiling keeps `CHAT_MARKUP_TOKENS` of room."""
    has_tool_calls: bool = False
    """A tool call streamed: its markup (`<tool_call>`, the JSON around name and arguments) is generated and parsed
    away, and SGLang 0.5.17 aborts such streams after the name (REAL: 24 tokens, 11 bytes streamed); no ceiling."""

    def gap(self, max_tokens: int | None) -> str:
        """Why the claimed completion tokens cannot be what streamed ("" when they can): above `max_tokens`, below
        the chunks that carried output, or above what the streamed text and chunks could hold."""
        claimed = self.claimed_tokens
        if claimed is None:
            return ""
        if claimed < 0:
            return f"usage.completion_tokens is {claimed}, a negative count"
        if max_tokens is not None and claimed > max_tokens:
            return (f"usage.completion_tokens {claimed} is above the request's max_tokens {max_tokens} "
                    f"({self.describe()}): the count is not the generation asked for")
        if claimed < self.output_chunks:
            return (f"usage.completion_tokens {claimed} is below the {self.output_chunks} chunks that carried output "
                    f"({self.describe()}): each carries at least one token, so chunks were repeated or the count "
                    "is made up")
        ceiling = self.output_bytes + self.chunks + (CHAT_MARKUP_TOKENS if self.is_chat else 0)
        if claimed > ceiling and not self.has_tool_calls:
            return (f"usage.completion_tokens {claimed} is above the {ceiling} tokens the stream could carry "
                    f"({self.describe()}; a token is at least one byte of text, or one special token per chunk)")
        return ""

    def describe(self) -> str:
        return (f"{self.chunks} chunks, {self.output_chunks} with output, {self.output_bytes} bytes of text "
                "arrived")


CHAT_MARKUP_TOKENS = 16
"""Tokens a chat stream may generate without streaming them (a reasoning block's tags, a stop sequence)."""


class OpenAIStream:
    """The semantics of an OpenAI-compatible event stream, read event by event (module docstring)."""

    def __init__(self) -> None:
        self.events = 0
        self.is_done = False
        self.finished: dict[int, str] = {}
        """Choice index -> its finish reason."""
        self.counts = StreamCounts()

    def read(self, data: bytes | str) -> dict | None:
        """One `data:` payload: its JSON object, None for `[DONE]`; StreamBroken naming a protocol fault."""
        self.events += 1
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape")
        if self.is_done:
            raise StreamBroken(f"protocol fault: event {self.events} came after data: [DONE] "
                               f"({shorten(_text(raw), 120)!r}): the stream had said it was over")
        if raw == DONE or raw.strip() == DONE:
            self.is_done = True
            return None
        try:
            body = read_json(raw, f"SSE data, event {self.events}")  # the one bounded JSON reader
        except ParseError as error:
            raise StreamBroken(f"SSE data is not JSON (event {self.events}; {error.reason}): "
                               f"{_text(raw)[:200]!r}") from None
        if not isinstance(body, dict):
            raise StreamBroken(f"SSE data is not a JSON object (event {self.events}): {_text(raw)[:200]!r}")
        choices = body.get("choices")
        if "error" in body and not choices:
            raise StreamBroken(f"error in stream: {shorten(json.dumps(body['error']), 300)}")
        if choices and isinstance(choices, list):
            self._choices(choices)
        usage = body.get("usage")
        if usage and isinstance(usage, dict):
            tokens, prompt = usage_count(usage, "completion_tokens"), usage_count(usage, "prompt_tokens")
            if isinstance(fault := tokens if isinstance(tokens, str) else prompt, str):
                raise StreamBroken(f"protocol fault: event {self.events}: {fault}")
            earlier = self.counts.claimed_tokens
            if tokens is not None and earlier is not None and tokens < earlier:
                raise StreamBroken(f"protocol fault: event {self.events}: usage.completion_tokens fell from {earlier} "
                                   f"to {tokens}: a count of the tokens generated so far only grows")
            if tokens is not None:
                self.counts.claimed_tokens = tokens
            if prompt is not None:
                self.counts.claimed_prompt_tokens = prompt
        return body

    def _choices(self, choices: list) -> None:
        counts = self.counts
        counts.chunks += 1
        carried = False
        for choice in choices:
            if not isinstance(choice, dict):
                continue  # the caller's shape check names it
            delta = choice.get("delta")
            if delta is None:  # the completions form: the load's hot path, inlined
                output = choice.get("text")
                if output.__class__ is not str:
                    output = ""
            else:
                output = choice_output(choice)
                counts.is_chat = True
                if isinstance(delta, dict) and delta.get("tool_calls"):
                    counts.has_tool_calls = True
            reason = choice.get("finish_reason")
            if self.finished:
                index = choice.get("index", 0)
                index = index if isinstance(index, int) else 0
                if index in self.finished and (output or reason):
                    said = f"output {shorten(output, 60)!r}" if output else f"a second finish_reason {reason!r}"
                    raise StreamBroken(f"protocol fault: event {self.events} carries {said} for choice {index}, "
                                       f"which had finished ({self.finished[index]!r}): nothing follows a finish "
                                       "reason")
            if output:
                carried = True
                counts.output_bytes += len(output) if output.isascii() else \
                    len(output.encode("utf-8", "surrogatepass"))
            if reason:
                index = choice.get("index", 0)
                self.finished[index if isinstance(index, int) else 0] = str(reason)
        counts.output_chunks += carried

    def end(self) -> None:
        """The stream ended: StreamBroken when it never said `[DONE]`."""
        if not self.is_done:
            last = "a finish reason" if self.finished else "no finish reason"
            raise StreamBroken(f"protocol fault: the stream ended without data: [DONE] after {self.events} events "
                               f"({last}): it may have been cut")


def usage_count(usage: dict, key: str) -> int | str | None:
    """`usage[key]` when it is a token count (an integer, not a bool: a negative one is judged by
    `StreamCounts.gap`), None when absent or null, else why it is no count (a str: `"50"`, `50.0`, `true` are what
    no engine sends, so a count a client would read some way is refused rather than guessed)."""
    value = usage.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return f"usage.{key} is {shorten(json.dumps(value), 60)} ({type(value).__name__}), not a token count"


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")
