"""What the inventory says about serving endpoints: the model served and the engine's flags."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, HttpUrl

from ._base import Spec


class SpeculativeSpec(Spec):
    """Speculative decoding as the engine must report it."""

    algorithm: str
    """As the engine reports it (SGLang rewrites NEXTN to EAGLE)."""
    num_steps: int | None = Field(None, ge=1)
    eagle_topk: int | None = Field(None, ge=1)
    num_draft_tokens: int | None = Field(None, ge=1)
    accept_length_min: float | None = Field(None, ge=0)
    """Lower bound of the mean acceptance length measured over this run's own traffic."""
    accept_length_max: float | None = Field(None, ge=0)


class ServingExpect(Spec):
    """The engine flags an endpoint must show."""

    kv_cache_dtype: Literal["bfloat16", "float16", "float32", "fp8", "auto"] | None = None
    """The KV cache dtype that must be in use. FP8 evidence fails a bfloat16 expectation."""
    dtype: str | None = None
    """Model (activation) dtype, e.g. bfloat16."""
    attention_backend: str | None = None
    speculative: SpeculativeSpec | None = None
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    tensor_parallel_size: int | None = Field(None, ge=1)
    nodes: int | None = Field(None, ge=1)
    """Nodes the tensor-parallel group spans (Ray on the Sparks)."""
    distributed_executor_backend: Literal["ray", "mp", "uni"] | None = None


class ToolCallGates(Spec):
    """Minimum validity rates of tool calls, per catalogue category (0..1)."""

    min_validity: dict[str, float] = {}
    """Category name → minimum rate; `overall` gates the whole catalogue."""
    samples_per_case: int = Field(3, ge=1)
    strict_tools: bool = False
    """Send tools with `"strict": true` (schema-constrained arguments where the engine supports it)."""
    large_argument_kib: list[int] = [8]
    """Sizes of the large-string cases; the seeds' truncation bug shows at 8-64 KiB."""


class EndpointSpec(Spec):
    """One OpenAI-compatible serving endpoint."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    platform: str
    base_url: HttpUrl
    """Root URL without /v1, e.g. http://127.0.0.1:8000."""
    engine: Literal["sglang", "vllm", "openai"]
    model: str
    """The model id /v1/models must list, exactly."""
    max_model_len: int | None = Field(None, ge=1)
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key; never the key itself."""
    host: str | None = None
    """Inventory host whose logs belong to this endpoint (for log-based evidence)."""
    logs: str | None = None
    """Where the engine's log is: `file:<path>`, `journal:<unit>`, `docker:<container>`, or `launch` (the
    log the suite's own launch wrote)."""
    request_timeout_s: float = Field(60, gt=0)
    expect: ServingExpect = ServingExpect()
    tool_calls: ToolCallGates = ToolCallGates()
    reasoning: bool = False
    """The model emits reasoning that the reasoning parser must split off."""
    smoke: bool = True
