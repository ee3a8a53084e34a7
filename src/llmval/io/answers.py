"""The shapes of the OpenAI-compatible answers checks read, validated before anything reads them (issue 23.3).

A server may answer anything: `{"data": ["m"]}`, a body `[]`, `"choices": "abc"`, JSON nested 100,000 deep.
Checks read answers as dicts (`card.get("id")`); an answer of another shape must not reach them as a
traceback and a "contract broken", but be *could not check* naming the shape. `parse_json` decodes a body
(`llmval.core.jsontext`: over 16 Mi characters, 64 levels deep or an integer of 40 digits is a clear error);
`checked(Model, data, what)` validates the parts a check reads (extra keys allowed: servers add their own) and
returns the data unchanged.

    >>> checked(ModelList, {"data": ["m"]}, "[e] GET /v1/models")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    llmval.core.errors.EndpointError: [e] GET /v1/models: the answer is not shaped as ...: data.0: Input should be ...
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.contract import shorten
from ..core.errors import EndpointError, ParseError
from ..core.jsontext import read_json


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow")


class ModelCard(_Shape):
    id: str
    owned_by: str | None = None
    root: str | None = None
    max_model_len: int | None = None


class ModelList(_Shape):
    """GET /v1/models."""

    data: list[ModelCard]


class Message(_Shape):
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None


class Choice(_Shape):
    message: Message | None = None
    finish_reason: str | None = None


TokenCount = Annotated[int, Field(strict=True, ge=0)]
"""A count of tokens as engines send it: a JSON integer >= 0 (`"50"`, `50.0`, `true` and `-5` are refused, never
read as a count: a check reading such a claim would judge a number no engine reported)."""


class Usage(_Shape):
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None


class ChatCompletion(_Shape):
    """POST /v1/chat/completions, not streamed."""

    choices: list[Choice]
    usage: Usage | None = None


class FunctionDelta(_Shape):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(_Shape):
    index: int = 0
    id: str | None = None
    function: FunctionDelta | None = None


class Delta(_Shape):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(_Shape):
    delta: Delta | None = None
    finish_reason: str | None = None


class ChatChunk(_Shape):
    """One `data:` event of a streamed chat completion."""

    choices: list[ChunkChoice] | None = None
    usage: dict[str, Any] | None = None


class Version(_Shape):
    """vLLM's GET /version."""

    version: str


def checked(model: type[BaseModel], data: object, what: str) -> Any:
    """`data` unchanged when it has `model`'s shape; EndpointError naming the first places it does not."""
    try:
        model.model_validate(data)
    except ValidationError as error:
        problems = [f"{'.'.join(map(str, e['loc'])) or '<top level>'}: {e['msg']} (got {shorten(repr(e['input']), 60)})"
                    for e in error.errors()[:3]]
        more = f" and {error.error_count() - 3} more" if error.error_count() > 3 else ""
        raise EndpointError(f"{what}: the answer is not shaped as an OpenAI-compatible server's: "
                            f"{'; '.join(problems)}{more}") from None
    return data


def parse_json(text: str | bytes, what: str) -> Any:
    """The JSON of a body, read by the one JSON reader (`llmval.core.jsontext.read_json`: size, depth and integer
    bounds); EndpointError naming `what` (the request) when it is over a bound or not JSON."""
    try:
        return read_json(text, what)
    except ParseError as error:
        raise EndpointError(f"{what}: {error.reason}") from None
