"""Join a streamed chat completion the way an OpenAI client does: content and reasoning deltas are
concatenated; tool-call deltas are merged by `index` (id, type and name from the first delta that has them,
`arguments` fragments concatenated in order).

    >>> events = ['{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function",'
    ...           '"function":{"name":"f","arguments":"{\\\\"a\\\\": "}}]}}]}',
    ...           '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},'
    ...           '"finish_reason":"tool_calls"}]}', "[DONE]"]
    >>> chat = join_chat_stream(events)
    >>> chat.tool_calls[0]["function"], chat.finish_reason
    ({'name': 'f', 'arguments': '{"a": 1}'}, 'tool_calls')
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core.errors import ParseError
from ..io.answers import ChatChunk, checked

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


def join_chat_stream(data: Iterable[str]) -> StreamedChat:
    """Fold the `data:` payloads of a chat-completions event stream into one message."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict] = {}
    finish_reason = None
    usage = None
    chunks = 0
    raw: list[str] = []
    for payload in data:
        raw.append(payload)
        if payload.strip() == "[DONE]":
            break
        try:
            chunk = json.loads(payload)
        except (json.JSONDecodeError, RecursionError) as error:
            raise ParseError("chat completion stream", f"event is not JSON ({error})", payload) from None
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
    return StreamedChat(content="".join(content), reasoning="".join(reasoning),
                        tool_calls=[calls[i] for i in sorted(calls)], finish_reason=finish_reason,
                        usage=usage, chunks=chunks, raw_events=raw)
