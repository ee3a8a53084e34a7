"""The inventory's `engine =` type: a kind of the adapter registry (`llmval.engines.ADAPTERS`), the one list.

The registry is read when a value is validated or the JSON schema is written, not when this module is imported:
`llmval.engines` imports the inventory models, so the models cannot import it first.
"""

from __future__ import annotations

from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema


def engine_kinds() -> list[str]:
    """The registry's engine kinds, in detection order."""
    from ..engines import ADAPTERS

    return list(ADAPTERS)


def _known(value: str) -> str:
    kinds = engine_kinds()
    if value not in kinds:
        raise ValueError(f"unknown engine {value!r}; valid: {sorted(kinds)}")
    return value


class EngineKind(str):
    """An engine kind of the adapter registry (`sglang`, `vllm`, `openai`, ...)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(_known, core_schema.str_schema())

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> dict:
        return {"enum": engine_kinds(), "type": "string"}
