"""The common base of every inventory model: unknown keys are an error, never silently ignored; no number
may be infinite or NaN. And the two marks a field's declaration may carry (`Annotated[...]` metadata, outside the
JSON schema): `JudgedBy`, the checks that judge the fact it states, and `Scaled`, how a machine-relative perf gate
follows the machine's calibration."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict


class Spec(BaseModel):
    """Base of inventory sections: frozen, strict about unknown keys, documented per field."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False,
                              strict=True)


@dataclass(frozen=True, init=False)
class JudgedBy:
    """The field states a fact, and these check ids (or globs) judge it: a declared fact that no held, broken or
    blocked verdict of them judged keeps the run from GREEN (`llmval.report.judged`, no green by omission).

        kv_cache_dtype: Annotated[str | None, JudgedBy("serving.kv_cache.dtype")] = None
    """

    checks: tuple[str, ...]

    def __init__(self, *checks: str):
        object.__setattr__(self, "checks", checks)


@dataclass(frozen=True)
class Scaled:
    """A perf number that follows the machine where the section's gates are machine-relative (`[perf.machine]`):
    `up`, a minimum rate (times the machine's factor); `down`, a maximum time (divided by it)."""

    direction: Literal["up", "down"]


def _marks(model: type[BaseModel], name: str) -> list[object]:
    return list(model.model_fields[name].metadata)


def _nested(annotation: object) -> type[BaseModel] | None:
    found = [a for b in (annotation, *typing.get_args(annotation)) for a in (b, *typing.get_args(b))
             if isinstance(a, type) and issubclass(a, BaseModel)]
    return found[0] if found else None


def judged_by(model: type[BaseModel], prefix: str = "") -> dict[str, tuple[str, ...]]:
    """Every field of `model` marked `JudgedBy`, as a dotted path (nested models searched, a marked nested model
    judged whole) -> its checks, in declaration order."""
    found: dict[str, tuple[str, ...]] = {}
    for name, info in model.model_fields.items():
        marks = [m for m in _marks(model, name) if isinstance(m, JudgedBy)]
        if marks:
            found[prefix + name] = tuple(c for m in marks for c in m.checks)
        elif (nested := _nested(info.annotation)) is not None:
            found |= judged_by(nested, f"{prefix}{name}.")
    return found


def scaled(model: type[BaseModel], direction: Literal["up", "down"]) -> tuple[str, ...]:
    """The fields of `model` marked `Scaled(direction)`, in declaration order."""
    return tuple(name for name in model.model_fields if Scaled(direction) in _marks(model, name))
