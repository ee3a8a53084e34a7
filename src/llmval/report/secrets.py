"""Secrets the reports must never contain: values of the environment variables the inventory names.

The inventory holds only references (`api_key_env`, `password_env`); whatever their variables hold is
scrubbed from every report, on top of `llmval.contract.redact`'s secret-named variables and shapes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..contract import redact


def _env_refs(value: Any) -> list[str]:
    names: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if str(key).endswith("_env") and isinstance(item, str):
                names.append(item)
            else:
                names += _env_refs(item)
    elif isinstance(value, list | tuple):
        for item in value:
            names += _env_refs(item)
    return names


def inventory_secret_values(inventory_data: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the environment variables named by `*_env` keys of the inventory (dumped to plain data)."""
    environ = os.environ if environ is None else environ
    return sorted({environ[name] for name in _env_refs(inventory_data) if len(environ.get(name, "")) >= 4})


def redact_tree(value: Any, extra_secrets: list[str] = ()) -> Any:
    """A copy of JSON-like data with every string redacted."""
    if isinstance(value, str):
        return redact(value, extra_secrets)
    if isinstance(value, Mapping):
        return {k: redact_tree(v, extra_secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v, extra_secrets) for v in value]
    return value
