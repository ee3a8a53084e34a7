"""SSE splitting is the same however the bytes are chunked."""

from __future__ import annotations

import itertools

from hypothesis import given, note
from hypothesis import strategies as st

from llmval.load import SseSplitter

from .strategies import completion_streams, render, wire_length


def _split(wire: bytes, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(wire)]
    splitter = SseSplitter()
    out: list[str] = []
    for a, b in itertools.pairwise(bounds):
        out += splitter.feed(wire[a:b])
    return out + splitter.close()


@given(stream=completion_streams(), data=st.data())
def test_sse_split_is_chunking_invariant(stream, data):
    wire = b"".join(raw for _, raw in render(stream.events))
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=wire_length(stream.events) - 1), max_size=60))
    note(f"cuts={sorted(cuts)}")
    assert _split(wire, cuts) == [e.data for e in stream.events]


def test_crlf_comments_and_multiline_data():
    wire = b": ping\r\n\r\ndata: a\r\ndata: b\r\n\r\ndata: [DONE]"
    assert _split(wire, [3, 9, 15, 16]) == ["a\nb", "[DONE]"]
