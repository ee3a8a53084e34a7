"""Speculative decoding seen from a client's stream: several tokens per streamed chunk, and why per-chunk ITL lies.

Under speculative decoding one engine step emits 1 + the accepted draft tokens, and the server streams them as
ONE chunk. The gap between chunks (ITL) is then the time of a step, not of a token: `1000 / median ITL`
understates the decode speed by the tokens-per-chunk factor. Decode speed is `1000 / median TPOT`, TPOT =
(E2E - TTFT) / (tokens - 1), as `vllm bench serve` and `llmval.load` compute it. A step can never emit more
than 1 + num_speculative_tokens tokens, so a stream whose chunks carry more than that on average was not
produced with the declared number of speculative tokens.

    shape = stream_chunking(record, num_speculative_tokens=4)   # record: llmval.load.RequestRecord
    shape.tokens_per_chunk, shape.decode_tok_s, shape.decode_tok_s_by_itl, shape.holds
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..core.errors import EndpointError
from . import RequestRecord


@dataclass(frozen=True)
class StreamChunking:
    """How one streamed request's tokens were spread over its chunks."""

    tokens: int
    chunks: int
    tpot_ms: float
    median_itl_ms: float
    max_tokens_per_step: int
    """1 + num_speculative_tokens: the most tokens one engine step can emit."""

    @property
    def tokens_per_chunk(self) -> float:
        return self.tokens / self.chunks

    @property
    def decode_tok_s(self) -> float:
        """1000 / TPOT: the decode speed (what the suite's perf gates use)."""
        return 1000 / self.tpot_ms if self.tpot_ms > 0 else 0.0

    @property
    def decode_tok_s_by_itl(self) -> float:
        """1000 / median ITL: the trap, one step per "token"."""
        return 1000 / self.median_itl_ms if self.median_itl_ms > 0 else 0.0

    @property
    def holds(self) -> bool:
        """Drafts were accepted (more than one token per chunk on average) and no more than one step allows."""
        return 1.0 < self.tokens_per_chunk <= self.max_tokens_per_step

    def describe(self, *, timed: bool = True) -> str:
        """The chunking in words; with `timed`, its TPOT and ITL too (a replayed stream has none worth saying)."""
        shape = (f"{self.tokens} tokens in {self.chunks} chunks = {self.tokens_per_chunk:.2f} tokens/chunk "
                 f"(<= {self.max_tokens_per_step} per step)")
        if not timed:
            return f"{shape}; no timing (replayed)"
        return (f"{shape}; TPOT {self.tpot_ms:.1f} ms -> {self.decode_tok_s:.1f} tok/s; median per-chunk ITL "
                f"{self.median_itl_ms:.1f} ms -> {self.decode_tok_s_by_itl:.1f} 'tok/s' if ITL were per token")


def stream_chunking(record: RequestRecord, *, num_speculative_tokens: int, what: str = "stream") -> StreamChunking:
    """The chunking of one successful streamed request; EndpointError when it failed or was too short to say."""
    if not record.success:
        raise EndpointError(f"{what}: the streamed request failed: {record.error}")
    if record.tpot_s is None or not record.itl_s or not record.output_tokens:
        raise EndpointError(f"{what}: the stream was too short to measure ({record.output_tokens} tokens, "
                            f"{record.chunks} chunks)")
    return StreamChunking(tokens=record.output_tokens, chunks=record.chunks, tpot_ms=record.tpot_s * 1000,
                          median_itl_ms=statistics.median(record.itl_s) * 1000,
                          max_tokens_per_step=1 + num_speculative_tokens)
