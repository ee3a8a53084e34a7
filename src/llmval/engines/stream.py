"""Join a streamed chat completion the way an OpenAI client does: content and reasoning deltas are
concatenated; tool-call deltas are merged by `index` (id, type and name from the first delta that has them,
`arguments` fragments concatenated in order). The events are read by the suite's one reading of an event stream
(`llmval.io.sse.OpenAIStream`), as the load generator reads them: `[DONE]` ends the stream, and an event after
it, or output after a finish reason is a protocol fault (a ParseError naming it); so is a stream that gave a
finish reason and then ended without `[DONE]`. One that ended with neither is joined as it came, its fault kept
in `fault`: the judges call it truncated (no finish reason), a measured miss rather than a check not made.

    >>> events = ['{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function",'
    ...           '"function":{"name":"f","arguments":"{\\\\"a\\\\": "}}]}}]}',
    ...           '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},'
    ...           '"finish_reason":"tool_calls"}]}', "[DONE]"]
    >>> chat = join_chat_stream(events)
    >>> chat.tool_calls[0]["function"], chat.finish_reason
    ({'name': 'f', 'arguments': '{"a": 1}'}, 'tool_calls')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core.errors import ParseError
from ..io.answers import ChatChunk, checked
from ..io.sse import OpenAIStream, StreamBroken, StreamCounts

REASONING_KEYS = ("reasoning_content", "reasoning")
"""SGLang names the field reasoning_content; vLLM ≥0.17 names it reasoning."""


@dataclass(frozen=True)
class StreamedChat:
    """A streamed chat completion, joined: what the client would have assembled from the deltas."""

    content: str
    reasoning: str
    tool_calls: list[dict]
    finish_reason: str | None
    usage: dict | None
    chunks: int
    raw_events: list[str] = field(default_factory=list)
    counts: StreamCounts = field(default_factory=StreamCounts)
    """What arrived (chunks with output, bytes of text) beside usage's claim."""
    fault: str = ""
    """The protocol fault of a stream that ended with no finish reason and no `[DONE]` ("" for a whole stream)."""


def _unbroken(data: Iterable[str | bytes]) -> Iterable[str | bytes]:
    """`data`, a fault of its SSE framing (`llmval.io.sse.SseSplitter`: a named `event: error`, an event past the
    size bound) raised as the ParseError every other protocol fault of the stream is."""
    try:
        yield from data
    except StreamBroken as fault:
        raise ParseError("chat completion stream", str(fault), "") from None


def join_chat_stream(data: Iterable[str | bytes], max_tokens: int | None = None) -> StreamedChat:
    """Fold the `data:` payloads of a chat-completions event stream into one message (ParseError: a protocol
    fault, an event of another shape, or a usage the stream cannot back: `StreamCounts.gap` with the request's
    `max_tokens`)."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict] = {}
    finish_reason = None
    usage = None
    chunks = 0
    raw: list[str] = []
    reader = OpenAIStream()
    for item in _unbroken(data):
        payload = item.decode("utf-8", "replace") if isinstance(item, bytes) else item
        raw.append(payload)
        try:
            chunk = reader.read(item)
        except StreamBroken as fault:
            raise ParseError("chat completion stream", str(fault), payload[:300]) from None
        if chunk is None:
            continue  # [DONE]: what follows it is read only to be refused
        checked(ChatChunk, chunk, f"chat completion stream, event {chunks + 1}")  # a dict of the shape read below
        chunks += 1
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            for key in REASONING_KEYS:
                if delta.get(key):
                    reasoning.append(delta[key])
            for call in delta.get("tool_calls") or []:
                # id and type as the deltas say them, never filled in: a stream without them fails validity
                slot = calls.setdefault(int(call.get("index", 0)),
                                        {"id": None, "type": None, "function": {"name": None, "arguments": ""}})
                if call.get("id") and not slot["id"]:
                    slot["id"] = call["id"]
                if call.get("type") and not slot["type"]:
                    slot["type"] = call["type"]
                function = call.get("function") or {}
                if function.get("name") and not slot["function"]["name"]:
                    slot["function"]["name"] = function["name"]
                if function.get("arguments"):
                    slot["function"]["arguments"] += function["arguments"]
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    fault = ""
    try:
        reader.end()
    except StreamBroken as broken:
        if finish_reason is not None:  # it said it finished, then stopped short of [DONE]: nothing can be trusted
            raise ParseError("chat completion stream", str(broken), raw[-1][:300] if raw else "") from None
        fault = str(broken)
    if gap := reader.counts.gap(max_tokens):
        raise ParseError("chat completion stream", f"token count not verified: {gap}", raw[-1][:300] if raw else "")
    return StreamedChat(content="".join(content), reasoning="".join(reasoning),
                        tool_calls=[calls[i] for i in sorted(calls)], finish_reason=finish_reason,
                        usage=usage, chunks=chunks, raw_events=raw, counts=reader.counts, fault=fault)
