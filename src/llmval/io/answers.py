"""The shapes of the OpenAI-compatible answers checks read, validated before anything reads them (issue 23.3).

A server may answer anything: `{"data": ["m"]}`, a body `[]`, `"choices": "abc"`, JSON nested 100,000 deep.
Checks read answers as dicts (`card.get("id")`); an answer of another shape must not reach them as a
traceback and a "contract broken", but be *could not check* naming the shape. `parse_json` decodes a body
(nesting beyond Python's recursion limit is a clear error too); `checked(Model, data, what)` validates the
parts a check reads (extra keys allowed: servers add their own) and returns the data unchanged.

    >>> checked(ModelList, {"data": ["m"]}, "[e] GET /v1/models")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    llmval.core.errors.EndpointError: [e] GET /v1/models: the answer is not shaped as ...: data.0: Input should be ...
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.contract import shorten
from ..core.errors import EndpointError


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


class Usage(_Shape):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


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


MAX_JSON_CHARS = 16 * 2**20
"""The largest JSON answer parsed: 16 Mi characters. Parsing multiplies its size in memory (56 MiB of
/v1/models entries took 640 MB to parse, 2.5 GB through a whole run); the largest real answer, a chat completion
of 32k tokens, is a few hundred kB."""


def parse_json(text: str, what: str) -> Any:
    """The JSON of a body; EndpointError when it is larger than `MAX_JSON_CHARS`, not JSON or nested too deep."""
    if len(text) > MAX_JSON_CHARS:
        raise EndpointError(f"{what}: a JSON answer of {len(text)} characters, over the {MAX_JSON_CHARS // 2**20} Mi "
                            "the suite parses (refused before parsing)")
    try:
        return json.loads(text)
    except RecursionError:
        raise EndpointError(f"{what}: the JSON is nested too deep to read ({len(text)} characters)") from None
    except ValueError as error:
        raise EndpointError(f"{what}: not JSON ({error}): {shorten(text, 200)!r}") from None
