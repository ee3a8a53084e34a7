"""Join a streamed chat completion the way an OpenAI client does: content and reasoning deltas are
concatenated; tool-call deltas are merged by `index` (id and name from the first delta that has them,
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

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core.jsontext import read_json
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
        chunk = read_json(payload, f"chat completion stream, event {chunks + 1}")  # ParseError: not JSON, a bound
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
                slot = calls.setdefault(int(call.get("index", 0)),
                                        {"id": None, "type": "function", "function": {"name": None, "arguments": ""}})
                if call.get("id") and not slot["id"]:
                    slot["id"] = call["id"]
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
