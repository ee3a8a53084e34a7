"""What the inventory says about serving endpoints: the model served and the engine's flags."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, HttpUrl, field_validator, model_validator

from ._base import JudgedBy, Spec
from ._engines import EngineKind
from .values import BaseUrlText, EnvKey, Label, Name, Rate, Seconds, check_source, url_port


class SpeculativeSpec(Spec):
    """Speculative decoding as the engine must report it."""

    algorithm: Annotated[Label, JudgedBy("serving.speculative.algorithm")]
    """As the engine reports it (SGLang rewrites NEXTN to EAGLE)."""
    num_steps: Annotated[int | None, JudgedBy("serving.speculative.num_steps")] = Field(None, ge=1, le=1024)
    eagle_topk: Annotated[int | None, JudgedBy("serving.speculative.eagle_topk")] = Field(None, ge=1, le=1024)
    num_draft_tokens: Annotated[int | None, JudgedBy("serving.speculative.num_draft_tokens")] = Field(
        None, ge=1, le=65536)
    accept_length_min: Annotated[float | None, JudgedBy("serving.speculative.accept_length")] = Field(
        None, ge=0, le=1024)
    """Lower bound of the mean acceptance length measured over this run's own traffic."""
    accept_length_max: Annotated[float | None, JudgedBy("serving.speculative.accept_length")] = Field(
        None, ge=0, le=1024)


class ServingExpect(Spec):
    """The engine flags an endpoint must show."""

    kv_cache_dtype: Annotated[Literal["bfloat16", "float16", "float32", "fp8", "auto"] | None,
        JudgedBy("serving.kv_cache.dtype")] = None
    """The KV cache dtype that must be in use. FP8 evidence fails a bfloat16 expectation."""
    dtype: Annotated[Label | None, JudgedBy("serving.model.dtype")] = None
    """Model (activation) dtype, e.g. bfloat16."""
    model_path: Annotated[str | None, JudgedBy("serving.model.identity")] = Field(None, min_length=1, max_length=4096)
    """The weights the engine must have loaded: its `--model` / `--model-path` as a path or Hugging Face id, whole
    or its tail (`Qwen/Qwen3.5-122B-A10B` matches `/models/Qwen/Qwen3.5-122B-A10B`). Unset, the served name's model
    family is held against the loaded path's (`llmval.engines.identity`)."""
    attention_backend: Annotated[Label | None, JudgedBy("serving.attention.backend")] = None
    speculative: SpeculativeSpec | None = None
    tool_call_parser: Annotated[Label | None, JudgedBy("serving.tool_call_parser")] = None
    reasoning_parser: Annotated[Label | None, JudgedBy("serving.reasoning_parser")] = None
    tensor_parallel_size: Annotated[int | None, JudgedBy("serving.parallel.tensor_parallel_size")] = Field(
        None, ge=1, le=4096)
    nodes: Annotated[int | None, JudgedBy("serving.parallel.nodes")] = Field(None, ge=1, le=4096)
    """Nodes the tensor-parallel group spans (Ray on the Sparks)."""
    distributed_executor_backend: Annotated[Literal["ray", "mp", "uni"] | None,
        JudgedBy("serving.parallel.executor_backend")] = None


DEFAULT_LARGE_ARGUMENT_KIB = (8, 32, 64)
LARGE_ARGUMENT_PROMPT_BYTES_PER_TOKEN = 1.9
"""Bytes of the large-string text per prompt token: SmolLM2's tokenizer (49k entries, a small vocabulary: larger
ones pack denser) reads the catalogue's own 1/8/32 KiB values at 1.98 bytes a token in the prompt."""
LARGE_ARGUMENT_ANSWER_BYTES_PER_TOKEN = 1.4
"""Bytes of the value per answer token: the same tokenizer writes it back JSON-escaped at 1.41 bytes a token."""
LARGE_ARGUMENT_PROMPT_ENVELOPE_TOKENS = 512
"""The prompt around the value: the instruction, the chat template and the tool's schema (SmolLM2's hermes
template: ~300 tokens), with room to spare."""
LARGE_ARGUMENT_ANSWER_ENVELOPE_TOKENS = 64
"""The answer around the value: the tool-call markup, the function name and the path (~30 tokens)."""


def tool_call_max_tokens_cap(max_model_len: int | None) -> int | None:
    """The most tokens a tool-call case may ask to generate: half the served context, so the prompt keeps the
    other half (the engine refuses a request whose prompt and max_tokens exceed max_model_len)."""
    return max_model_len // 2 if max_model_len else None


def large_argument_fits(kib: int, max_model_len: int) -> bool:
    """Whether a large-string case of `kib` KiB fits the served context as the sweep sends it: its prompt (the value
    at LARGE_ARGUMENT_PROMPT_BYTES_PER_TOKEN plus the envelope) within the half the answer does not take, and the
    value written back (at LARGE_ARGUMENT_ANSWER_BYTES_PER_TOKEN plus its envelope) within the answer's
    `tool_call_max_tokens_cap`. A size that does not fit would be refused by the engine (prompt + max_tokens over
    max_model_len) or cut at max_tokens: the suite's own oversize request, never the deployment's fault.

    >>> large_argument_fits(5, 8192), large_argument_fits(8, 8192), large_argument_fits(64, 262144)
    (True, False, True)
    """
    answer = tool_call_max_tokens_cap(max_model_len) or 0
    prompt_tokens = kib * 1024 / LARGE_ARGUMENT_PROMPT_BYTES_PER_TOKEN + LARGE_ARGUMENT_PROMPT_ENVELOPE_TOKENS
    answer_tokens = kib * 1024 / LARGE_ARGUMENT_ANSWER_BYTES_PER_TOKEN + LARGE_ARGUMENT_ANSWER_ENVELOPE_TOKENS
    return prompt_tokens <= max_model_len - answer and answer_tokens <= answer


class ToolCallGates(Spec):
    """The tool-call catalogue sweep (tests/serving/test_tool_calls.py) and its gates, per category.

    Gate keys, most specific first: `<variant>/<category>` (e.g. `strict/flat`), `<category>`,
    `<variant>`, `overall`. A cell with no key gated is held to `default_min_validity`."""

    variants: list[Literal["strict", "free"]] = ["free"]
    """`strict`: tools sent with `"strict": true` (schema-constrained arguments); `free`: without."""
    tool_choice: Literal["auto", "required", "named"] = "auto"
    """How the catalogue asks for calls; `auto` exercises the engine's tool parser as agent clients do."""
    cases_per_category: int = Field(4, ge=1, le=1000)
    """Cases per category (large_string: one per size in `large_argument_kib`); each runs non-streamed and
    streamed, so a cell has 2 x cases samples."""
    parallel_calls: int = Field(5, ge=2, le=128)
    large_argument_kib: list[Annotated[int, Field(ge=1, le=16384)]] = Field(list(DEFAULT_LARGE_ARGUMENT_KIB),
                                                                            max_length=32)
    """Sizes of the large-string cases; the seeds' truncation bug shows at 8-64 KiB. With the endpoint's
    `max_model_len` declared, a size that cannot fit it (`large_argument_fits`) is refused when the inventory
    loads; left out, the default keeps the sizes of 8, 32, 64 that fit."""
    min_validity: dict[Label, Rate] = {}
    """Minimum share of valid answers (JSON object, schema-valid, untruncated, no markup leak, stream = non-stream)."""
    min_accuracy: dict[Label, Rate] = {}
    """Minimum share of answers with exactly the requested calls (tests/accuracy; keys as min_validity)."""
    default_min_validity: Rate = 1.0

    def gate(self, kind: Literal["validity", "accuracy"], variant: str, category: str) -> float | None:
        """The threshold for one cell; None for accuracy when no key applies."""
        table = self.min_validity if kind == "validity" else self.min_accuracy
        for key in (f"{variant}/{category}", category, variant, "overall"):
            if key in table:
                return table[key]
        return self.default_min_validity if kind == "validity" else None


class EndpointSpec(Spec):
    """One OpenAI-compatible serving endpoint."""

    name: Name
    platform: Label
    base_url: Annotated[HttpUrl, BaseUrlText]
    """Root URL without /v1, e.g. http://127.0.0.1:8000."""
    engine: Annotated[EngineKind, JudgedBy("serving.engine.kind")]
    model: Annotated[Label, JudgedBy("serving.model.id")]
    """The model id /v1/models must list, exactly."""
    max_model_len: Annotated[int | None, JudgedBy("serving.model.max_model_len")] = Field(None, ge=1, le=2**31)
    api_key_env: EnvKey | None = None
    """Name of the environment variable that holds the API key; never the key itself."""
    host: Name | None = None
    """Inventory host whose logs belong to this endpoint (for log-based evidence)."""
    logs: str | None = None
    """Where the engine's log is: `file:<path>`, `journal:<unit>`, `docker:<container>`, or `launch` (the
    log the suite's own launch wrote)."""
    request_timeout_s: Seconds = 60
    """Timeout of one request (a generation may take minutes on a big model)."""
    health_timeout_s: float = Field(5, gt=0, le=60)
    """Timeout of the health and readiness probes (GET /health): short, so a server that accepts connections
    and never answers is named in seconds, whatever request_timeout_s is."""
    wait_ready_s: float | None = Field(None, ge=0, le=86400)
    """Attach mode: how long to wait for this endpoint to be ready (health 200 and its model listed) before
    judging it, e.g. after a reboot (the 122B model loads for minutes). `--wait-ready=SECONDS` overrides it;
    unset: no waiting unless `--wait-ready` is given."""
    expect: ServingExpect = ServingExpect()
    tool_calls: Annotated[ToolCallGates, JudgedBy("serving.tool_calls.*", "accuracy.tool_calls.*")] = ToolCallGates()
    reasoning: Annotated[bool, JudgedBy("serving.reasoning.*")] = False
    """The model emits reasoning that the reasoning parser must split off."""
    smoke: bool = True

    @property
    def root_url(self) -> str:
        """`base_url` as text without a trailing slash: what every client, stream and probe puts paths after."""
        return str(self.base_url).rstrip("/")

    @property
    def port(self) -> int:
        """The TCP port the endpoint listens on: `base_url`'s, else its scheme's (`values.url_port`)."""
        return url_port(str(self.base_url))

    @model_validator(mode="before")
    @classmethod
    def _large_arguments_fit(cls, data: object) -> object:
        """A large-string size the served context cannot hold is refused now, never sent and judged an invalid
        call; the default sizes are those that fit."""
        if not isinstance(data, dict):
            return data
        length, gates = data.get("max_model_len"), data.get("tool_calls", {})
        if not isinstance(length, int) or isinstance(length, bool) or length < 1 or not isinstance(gates, dict):
            return data
        sizes = gates.get("large_argument_kib")
        if sizes is None:
            fit = [kib for kib in DEFAULT_LARGE_ARGUMENT_KIB if large_argument_fits(kib, length)]
            return {**data, "tool_calls": {**gates, "large_argument_kib": fit}}
        too_big = [kib for kib in sizes if isinstance(kib, int) and not isinstance(kib, bool) and kib >= 1
                   and not large_argument_fits(kib, length)] if isinstance(sizes, list) else []
        if too_big:
            fitting = [k for k in range(1, 16385) if large_argument_fits(k, length)]
            most = f"at most {max(fitting)} KiB fits" if fitting else "no size fits"
            raise ValueError(f"tool_calls.large_argument_kib: {too_big} KiB cannot fit the served context "
                             f"(max_model_len = {length}): a value is in the prompt (~"
                             f"{LARGE_ARGUMENT_PROMPT_BYTES_PER_TOKEN} bytes a token) and again in the answer (~"
                             f"{LARGE_ARGUMENT_ANSWER_BYTES_PER_TOKEN} bytes a token, at most max_tokens = "
                             f"{tool_call_max_tokens_cap(length)}, half the context); {most} (drop the larger "
                             "sizes, or declare the real max_model_len)")
        return data

    @field_validator("logs")
    @classmethod
    def _logs_parse(cls, value: str | None) -> str | None:
        return value if value is None else check_source(value, ("file", "journal", "docker"), bare=("launch",))
