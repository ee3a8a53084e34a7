"""Where an inventory problem is, for a person: the key a typo meant and the line of the TOML file it is on.

`meant_key(schema, loc)`: the closest key the inventory takes beside an unknown one (`compute_capabilty` ->
`compute_capability`), read from the inventory's JSON schema, so it knows every section without a list of its own.
`toml_lines(text)`: each key path of a TOML text -> the line it is written on (tables, arrays of tables, dotted
and inline-table keys), so a problem's pydantic location (`("hosts", 0, "gpus", "compute_capabilty")`) finds it.

    >>> lines = toml_lines('[[hosts]]\\nname = "a"\\n[hosts.gpus]\\ncount = 4\\n[[hosts]]\\nname = "b"\\n')
    >>> lines[("hosts", 0, "gpus", "count")], lines[("hosts", 1, "name")]
    (4, 6)
"""

from __future__ import annotations

import difflib
import re
from typing import Any

HEADER_RE = re.compile(r"^\s*(?P<open>\[\[?)\s*(?P<keys>[^\]]*?)\s*\]\]?\s*(?:#.*)?$")
_ONE_KEY = r"""(?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+)"""
KEY_RE = re.compile(rf"\s*(?P<key>{_ONE_KEY}(?:\s*\.\s*{_ONE_KEY})*)\s*=")
"""A key (bare, quoted or dotted) and its `=`, at the start of a line or after `{` / `,` in an inline table."""
MEANT_CUTOFF = 0.75
"""How alike (difflib's ratio) a key must be to be named as the one meant: `compute_capabilty` is 0.97."""


def _split(text: str) -> tuple[str, ...]:
    """`a."b.c".d` -> ('a', 'b.c', 'd'), as TOML reads a dotted key."""
    parts, current, quote = [], "", ""
    for char in text:
        if quote:
            if char == quote:
                quote = ""
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return tuple(parts)


def toml_lines(text: str) -> dict[tuple, int]:
    """Every key path of `text` (list items by their index) -> its 1-based line (the first, where written twice)."""
    lines: dict[tuple, int] = {}
    arrays: dict[tuple, int] = {}  # array of tables (by its resolved path) -> index of its last item
    table: tuple = ()

    def resolved(keys: tuple[str, ...]) -> tuple:
        path: tuple = ()
        for key in keys:
            path += (key,)
            if path in arrays:
                path += (arrays[path],)
        return path

    for number, line in enumerate(text.splitlines(), start=1):
        if (header := HEADER_RE.match(line)) and not line.lstrip().startswith("#"):
            keys = _split(header["keys"])
            if header["open"] == "[[":
                parent = (*resolved(keys[:-1]), keys[-1])
                arrays[parent] = arrays.get(parent, -1) + 1
                table = (*parent, arrays[parent])
            else:
                table = resolved(keys)
            lines.setdefault(table, number)
            continue
        code = line.split("#", 1)[0] if '"' not in line and "'" not in line else line
        position, prefix = 0, table
        while (found := KEY_RE.match(code, position)) is not None:
            path = prefix + _split(found["key"])
            lines.setdefault(path, number)
            rest = code[found.end():].lstrip()
            if rest.startswith("{"):  # an inline table: its keys follow on this line
                prefix, position = path, code.index("{", found.end()) + 1
                continue
            comma = code.find(",", found.end())
            if comma < 0 or prefix == table:
                break
            position = comma + 1
    return lines


def line_of(text: str, loc: tuple) -> int | None:
    """The line of `loc` in `text` (of its first table, where it is written only as tables), or of its nearest
    written ancestor, else None. A key pydantic adds to the
    location (a transport's tag: `transport.ssh.adress` is written `transport.adress`) is passed over."""
    lines = toml_lines(text)
    path = tuple(loc)
    while path:
        if path in lines:
            return lines[path]
        if below := [n for written, n in lines.items() if written[: len(path)] == path]:
            return min(below)  # written only as its tables (`[[endpoint]]`: ("endpoint", 0)): its first line
        for index in range(len(path) - 1):
            dropped = path[:index] + path[index + 1:]
            if not isinstance(path[index], int) and dropped in lines:
                return lines[dropped]
        path = path[:-1]
    return None


def _alternatives(schema: dict, node: dict) -> list[dict]:
    """`node` with $ref, anyOf/oneOf/allOf and array items resolved: the schemas it may be."""
    if "$ref" in node:
        return _alternatives(schema, schema.get("$defs", {}).get(node["$ref"].rsplit("/", 1)[-1], {}))
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in node:
            return [a for option in node[combinator] for a in _alternatives(schema, option)]
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        return _alternatives(schema, node["items"])
    if isinstance(node.get("additionalProperties"), dict) and "properties" not in node:
        return _alternatives(schema, node["additionalProperties"])
    return [node]


def keys_at(schema: dict, loc: tuple) -> list[str]:
    """The keys the inventory takes in the table at `loc` (list indices and tags that are no key are passed over)."""
    nodes = _alternatives(schema, schema)
    for part in loc:
        if isinstance(part, int):
            continue
        below = [a for n in nodes if part in n.get("properties", {})
                 for a in _alternatives(schema, n["properties"][part])]
        nodes = below or nodes  # a discriminator's tag (`ssh`) names no key: stay where we are
    return sorted({key for n in nodes for key in n.get("properties", {})})


def meant_key(schema: dict, loc: tuple) -> str | None:
    """The key the unknown last key of `loc` most likely meant, if one is close enough.

    >>> schema = {"properties": {"gpus": {"properties": {"compute_capability": {}, "count": {}}}}}
    >>> meant_key(schema, ("gpus", "compute_capabilty")), meant_key(schema, ("gpus", "colour"))
    ('compute_capability', None)
    """
    if not loc or not isinstance(loc[-1], str):
        return None
    choices = keys_at(schema, loc[:-1])
    found = difflib.get_close_matches(loc[-1], choices, n=1, cutoff=MEANT_CUTOFF) or \
        [c for c in choices if c.lower() == loc[-1].lower().replace("-", "_")]
    return found[0] if found else None


KEY_PATH_PART_RE = re.compile(r"\[(?P<index>\d+)(?::[^\]]*)?\]|\.?(?P<key>[^.\[]+)")


def loc_of(key_path: str) -> tuple:
    """A problem's key path as pydantic's location: `hosts[1:ct].gpus.count` -> ("hosts", 1, "gpus", "count").

    >>> loc_of("endpoints[0:kpro6-sglang].expect.speculative.algorithm")
    ('endpoints', 0, 'expect', 'speculative', 'algorithm')
    """
    return tuple(int(part["index"]) if part["index"] is not None else part["key"]
                 for part in KEY_PATH_PART_RE.finditer(key_path))


def with_line(reason: str, text: str | None, loc: tuple[Any, ...]) -> str:
    """`reason (line N)` when the TOML text is known and the key (or its table) found in it."""
    if text is None:
        return reason
    number = line_of(text, loc)
    return f"{reason} (line {number})" if number is not None else reason
