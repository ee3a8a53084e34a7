"""The check of a whole inventory that no field can make before pydantic sees it: the shape of the raw TOML
(nesting, sizes, control characters in keys), as `(key path, reason)` problems, so every message names where the
problem is. The cross-references between sections are the `Inventory` model's own (`reference_problems`, beside it).
"""

from __future__ import annotations

from typing import Any

from .values import CONTROL_RE

MAX_DEPTH = 12
"""The deepest real inventory nests 7 levels (hosts → [i] → proxmox → guests → [i] → bus_ids → [i])."""
MAX_ITEMS = 10_000
MAX_STRING = 20_000
MAX_KEY = 256
MAX_INT = 2**62


def raw_problems(data: dict, key_path) -> list[tuple[str, str]]:
    """Nesting depth, list and string sizes, huge integers and control characters in keys, found without
    recursion (a 600-deep array must give a message, not a RecursionError)."""
    problems: list[tuple[str, str]] = []
    stack: list[tuple[tuple, Any]] = [((), data)]
    while stack and len(problems) < 20:
        loc, node = stack.pop()
        if len(loc) > MAX_DEPTH:
            problems.append((key_path(loc[:MAX_DEPTH], data), f"nested deeper than {MAX_DEPTH} levels"))
            continue
        if isinstance(node, dict):
            if len(node) > MAX_ITEMS:
                problems.append((key_path(loc, data), f"{len(node)} keys; at most {MAX_ITEMS}"))
                continue
            for key, value in node.items():
                if len(key) > MAX_KEY or CONTROL_RE.search(key) or any(c in key for c in "\t\n\r"):
                    problems.append((key_path(loc, data), f"key {key[:80]!r}: control characters or longer "
                                     f"than {MAX_KEY} characters"))
                    continue
                stack.append(((*loc, key), value))
        elif isinstance(node, list):
            if len(node) > MAX_ITEMS:
                problems.append((key_path(loc, data), f"{len(node)} items; at most {MAX_ITEMS}"))
                continue
            stack.extend(((*loc, i), item) for i, item in enumerate(node))
        elif isinstance(node, str) and len(node) > MAX_STRING:
            problems.append((key_path(loc, data), f"a string of {len(node)} characters; at most {MAX_STRING}"))
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
            problems.append((key_path(loc, data), f"{node} is out of range (|n| <= 2^62)"))
    return sorted(problems)
