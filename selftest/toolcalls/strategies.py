"""Named hypothesis strategies for tool calls: JSON schemas with a value that conforms, and SSE chunkings."""

from __future__ import annotations

from hypothesis import strategies as st

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
TRICKY_PIECES = [*'ab "\\\n\t{}<>/=é中🚀', "</parameter>", "<parameter=x>", "null"]
TRICKY_TEXT = st.lists(st.sampled_from(TRICKY_PIECES), max_size=30).map("".join)


@st.composite
def schemas_with_values(draw, depth: int = 2) -> tuple[dict, object]:
    """(JSON schema, a value valid against it): strings full of escapes, ints near 2^53, enums, arrays, objects."""
    kinds = ["string", "integer", "number", "boolean", "enum"] + (["array", "object"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "string":
        return {"type": "string"}, draw(TRICKY_TEXT)
    if kind == "integer":
        return {"type": "integer"}, draw(st.one_of(st.integers(-(2**53) - 8, -(2**53) + 8),
                                                   st.integers(2**53 - 8, 2**53 + 8), st.integers(-1000, 1000)))
    if kind == "number":
        return {"type": "number"}, draw(st.floats(allow_nan=False, allow_infinity=False, width=64))
    if kind == "boolean":
        return {"type": "boolean"}, draw(st.booleans())
    if kind == "enum":
        options = draw(st.lists(st.one_of(TRICKY_TEXT, st.integers(-5, 5)), min_size=1, max_size=4, unique=True))
        return {"enum": options}, draw(st.sampled_from(options))
    if kind == "array":
        item_schema, _ = draw(schemas_with_values(depth=depth - 1))
        items = draw(st.lists(st.just(None), max_size=3))
        values = [draw(_value_for(item_schema)) for _ in items]
        return {"type": "array", "items": item_schema}, values
    return draw(object_schemas_with_values(depth=depth - 1))


@st.composite
def object_schemas_with_values(draw, depth: int = 2) -> tuple[dict, dict]:
    """An object schema (the shape tool parameters have) and a conforming object."""
    keys = draw(st.lists(KEYS, min_size=1, max_size=4, unique=True))
    properties, value = {}, {}
    for key in keys:
        properties[key], value[key] = draw(schemas_with_values(depth=depth))
    return ({"type": "object", "properties": properties, "required": keys, "additionalProperties": False}, value)


@st.composite
def _value_for(draw, schema: dict) -> object:
    """Another value for an already drawn schema (array items)."""
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    kind = schema["type"]
    if kind == "string":
        return draw(TRICKY_TEXT)
    if kind == "integer":
        return draw(st.integers(-(2**60), 2**60))
    if kind == "number":
        return draw(st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "array":
        return [draw(_value_for(schema["items"])) for _ in range(draw(st.integers(0, 2)))]
    return {k: draw(_value_for(s)) for k, s in schema["properties"].items()}


def cut_points(text_len: int):
    """Sorted unique positions splitting a string of `text_len` characters into stream deltas."""
    return st.lists(st.integers(0, max(text_len, 0)), max_size=12).map(lambda xs: sorted(set(xs)))
