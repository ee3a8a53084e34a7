"""Performance gates of an endpoint."""

from __future__ import annotations

from pydantic import Field

from ._base import Spec


class PerfSpec(Spec):
    """Performance gates, measured with vLLM's definitions (`vllm bench serve`)."""

    endpoint: str
    input_len: int = Field(256, ge=1)
    output_len: int = Field(128, ge=1)
    warmup_requests: int = Field(2, ge=0)
    requests_per_concurrency: int = Field(4, ge=1)
    """k in k·C requests run at concurrency C."""
    decode_tok_s_c1_min: float | None = Field(None, gt=0)
    """Minimum decode tok/s of one stream (1000 / median TPOT at concurrency 1)."""
    throughput_concurrency: int | None = Field(None, ge=1)
    output_tok_s_min: float | None = Field(None, gt=0)
    """Minimum output throughput at `throughput_concurrency`."""
    ttft_p99_ms_max: float | None = Field(None, gt=0)
    baseline_tolerance: float = Field(0.10, ge=0, lt=1)
    """Allowed relative regression against the stored baseline."""
    quoted_tok_s: float | None = None
    """The number the owners quote (e.g. 277 tok/s on kpro6), for the status document."""
