"""Secrets the reports must never contain: values of the environment variables the inventory names.

The inventory holds only references (`api_key_env`, `password_env`); whatever their variables hold is
scrubbed from every report, on top of `llmval.core.contract.redact`'s secret-named variables and shapes, together
with the start or end of one that a cut left (`llmval.core.contract.FRAGMENT`). A referenced variable holding fewer
than `MIN_SECRET_LENGTH` (8) characters is refused at load (`secret_problems`, exit 4 naming the key): so short a
value cannot be told from ordinary text, so it could be neither redacted nor kept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .contract import MIN_SECRET_LENGTH, redact


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


def _env_ref_paths(value: Any, where: str = "") -> list[tuple[str, str]]:
    """(key path, variable name) of every `*_env` reference, paths as inventory errors write them
    (`endpoints[0:local-vllm].api_key_env`)."""
    found: list[tuple[str, str]] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            if str(key).endswith("_env") and isinstance(item, str):
                found.append((path, item))
            else:
                found += _env_ref_paths(item, path)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            name = item.get("name") if isinstance(item, Mapping) else None
            found += _env_ref_paths(item, f"{where}[{index}:{name}]" if isinstance(name, str) else f"{where}[{index}]")
    return found


def secret_problems(inventory_data: Mapping[str, Any],
                    environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(key path, reason) of every `*_env` reference whose variable is set but holds fewer than 8 characters."""
    environ = os.environ if environ is None else environ
    problems = []
    for path, name in _env_ref_paths(inventory_data):
        value = environ.get(name, "")
        if 0 < len(value) < MIN_SECRET_LENGTH:
            problems.append((path, f"${name} holds {len(value)} characters; a secret shorter than "
                                   f"{MIN_SECRET_LENGTH} cannot be told from ordinary text, so no report could "
                                   "be kept free of it: use a longer key or password"))
    return problems


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
