"""Named hypothesis strategies for the load generator: SYNTHESIZED OpenAI completion streams.

A stream is a list of SSE events, each with the time the server sent it; `wire_pieces` cuts the
bytes of every event at arbitrary points (inside lines, inside UTF-8 characters), each piece keeping
its event's arrival time: the same stream as a network might deliver it in different reads.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

from hypothesis import strategies as st

TEXTS = st.sampled_from(["a", " the", "é", " 日本", "\n", "", " tok", "🙂", "\\\"", " data: x"])


@dataclass(frozen=True)
class Event:
    at: float
    data: str


@dataclass(frozen=True)
class FakeStream:
    """A completion stream: token chunks (several tokens each under spec decoding), usage, [DONE]."""

    events: list[Event]
    chunk_times: list[float]
    completion_tokens: int
    prompt_tokens: int


def render(events: list[Event]) -> list[tuple[float, bytes]]:
    return [(e.at, f"data: {e.data}\n\n".encode()) for e in events]


@st.composite
def completion_streams(draw, *, min_chunks: int = 1, max_chunks: int = 30) -> FakeStream:
    """Chunks at increasing times with 1-4 tokens each, then the usage message and [DONE]. A chunk carries no more
    tokens than its text has bytes (one for an empty text: a special token), as a real tokenizer's would: usage
    beyond what arrived is a lie the reader refuses (`llmval.io.sse.StreamCounts.gap`)."""
    n = draw(st.integers(min_value=min_chunks, max_value=max_chunks))
    gaps = draw(st.lists(st.floats(min_value=0.0005, max_value=0.5, allow_nan=False), min_size=n + 1, max_size=n + 1))
    texts = draw(st.lists(TEXTS, min_size=n, max_size=n))
    tokens_per_chunk = [draw(st.integers(min_value=1, max_value=max(1, min(4, len(text.encode())))))
                        for text in texts]
    prompt_tokens = draw(st.integers(min_value=1, max_value=4096))
    times, t = [], 0.0
    for gap in gaps[:n]:
        t += gap
        times.append(round(t, 6))
    events = []
    for i, at in enumerate(times):
        finish = "length" if i == n - 1 else None
        body = {"id": "cmpl-1", "object": "text_completion",
                "choices": [{"index": 0, "text": texts[i], "finish_reason": finish}]}
        events.append(Event(at, json.dumps(body, ensure_ascii=False)))
    usage_at = round(times[-1] + gaps[n], 6)
    completion = sum(tokens_per_chunk)
    usage = {"id": "cmpl-1", "choices": [],
             "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                       "total_tokens": prompt_tokens + completion}}
    events += [Event(usage_at, json.dumps(usage)), Event(usage_at, "[DONE]")]
    return FakeStream(events=events, chunk_times=times, completion_tokens=completion, prompt_tokens=prompt_tokens)


def wire_pieces(events: list[Event], cuts: list[int]) -> list[tuple[float, bytes]]:
    """The events' bytes split at each event boundary and additionally at `cuts` (offsets in the wire)."""
    pieces: list[tuple[float, bytes]] = []
    offset = 0
    for at, raw in render(events):
        inner = sorted({c - offset for c in cuts if offset < c < offset + len(raw)})
        bounds = [0, *inner, len(raw)]
        pieces += [(at, raw[a:b]) for a, b in itertools.pairwise(bounds)]
        offset += len(raw)
    return pieces


def wire_length(events: list[Event]) -> int:
    return sum(len(raw) for _, raw in render(events))


sample_lists = st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
                        min_size=1, max_size=200)
percentiles = st.one_of(st.sampled_from([0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0]),
                        st.floats(min_value=0, max_value=100, allow_nan=False))
