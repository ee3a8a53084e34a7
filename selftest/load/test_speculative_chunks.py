"""llmval.load.speculative: tokens per streamed chunk under speculative decoding, and the per-chunk-ITL trap."""

from __future__ import annotations

import pytest

from llmval.core.errors import EndpointError
from llmval.load import RequestRecord
from llmval.load.speculative import stream_chunking


def _record(tokens: int, chunks: int, step_s: float = 0.1) -> RequestRecord:
    return RequestRecord(success=True, ttft_s=0.05, latency_s=0.05 + step_s * (chunks - 1),
                         itl_s=[step_s] * (chunks - 1), output_tokens=tokens, chunks=chunks)


def test_four_tokens_a_chunk_with_four_speculative_tokens_holds_and_itl_understates():
    shape = stream_chunking(_record(tokens=80, chunks=20), num_speculative_tokens=4)
    assert shape.tokens_per_chunk == 4 and shape.holds
    assert shape.decode_tok_s == pytest.approx(1000 / (1900 / 79))  # (E2E - TTFT) / (tokens - 1)
    assert shape.decode_tok_s_by_itl == pytest.approx(10.0) and shape.decode_tok_s > 3 * shape.decode_tok_s_by_itl


@pytest.mark.parametrize(("tokens", "chunks", "k"), [(80, 20, 2), (20, 20, 4)])
def test_more_than_one_step_allows_or_no_draft_accepted_fails(tokens, chunks, k):
    assert not stream_chunking(_record(tokens, chunks), num_speculative_tokens=k).holds


def test_failed_or_one_chunk_stream_cannot_be_judged():
    with pytest.raises(EndpointError, match="failed"):
        stream_chunking(RequestRecord(success=False, error="HTTP 500"), num_speculative_tokens=4)
    with pytest.raises(EndpointError, match="too short"):
        stream_chunking(_record(tokens=1, chunks=1), num_speculative_tokens=4)
