"""The common base of every inventory model: unknown keys are an error, never silently ignored; no number
may be infinite or NaN."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Spec(BaseModel):
    """Base of inventory sections: frozen, strict about unknown keys, documented per field."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False,
                              strict=True)
