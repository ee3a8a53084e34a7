"""The inventory's `engine =` type: a kind of the adapter registry (`llmval.engines.ADAPTERS`), the one list.

The models sit below the adapters (`llmval.engines` imports them), so they cannot import the registry: the
registry hands itself down when it is built (`use_engine_registry(ADAPTERS)`, in `llmval.engines`), and the
package root imports `llmval.engines`, so it is there before any inventory is validated. It is read, live, when a
value is validated or the JSON schema is written: a kind added to the registry is a choice at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema

_registry: Mapping[str, object] | None = None


def use_engine_registry(adapters: Mapping[str, object]) -> None:
    """The adapter registry whose keys are the inventory's engine kinds (`llmval.engines` calls this once)."""
    global _registry
    _registry = adapters


def engine_kinds() -> list[str]:
    """The registry's engine kinds, in detection order."""
    if _registry is None:  # only when the package root was bypassed; it imports llmval.engines
        raise RuntimeError("no engine registry: llmval.engines was not imported (the llmval package imports it)")
    return list(_registry)


def speculative_algorithm_problem(engine: str, algorithm: str) -> str | None:
    """Why `engine` can never report the speculative `algorithm` (its adapter's
    `speculative_algorithm_problem`), else None."""
    if _registry is None or engine not in _registry:
        return None
    judge = getattr(_registry[engine], "speculative_algorithm_problem", None)
    return judge(algorithm) if callable(judge) else None


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
