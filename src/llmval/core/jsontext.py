"""The one JSON reader: every JSON the suite reads (HTTP answers, host command output, recordings, reports of
earlier runs, its own children's lines) is decoded here, within bounds.

A server or a host may print anything: 100,000 nested `[` (a `RecursionError` out of `json.loads`, or a value
that parses at depth 990 and breaks whatever walks it later), an integer of 5,000 digits (`ValueError: Exceeds
the limit (4300 digits)`), 1 GB of `[1,` ... Each is refused here before it is parsed, as a `ParseError` naming
the source and the bound: a check then says *could not check* with the source's name, never a traceback.

    >>> read_json('{"a": [1, 2]}', "demo")
    {'a': [1, 2]}
    >>> read_json("[" * 200 + "]" * 200, "GET /server_info")
    Traceback (most recent call last):
    ...
    llmval.core.errors.ParseError: cannot parse GET /server_info: JSON nested too deep: 200 levels, over the 64 ...

`llmval.io.answers.parse_json` is this reader for HTTP answers (an `EndpointError` naming the request);
`selftest/hostile/test_one_json_reader.py` finds any other `json.loads`/`.json()` in the package.
"""

from __future__ import annotations

import json
import re
from array import array
from itertools import accumulate
from typing import Any

from .errors import ParseError

MAX_JSON_CHARS = 16 * 2**20
"""The largest JSON parsed: 16 Mi characters. Parsing multiplies its size in memory (56 MiB of /v1/models entries
took 640 MB to parse, 2.5 GB through a whole run); the largest real answer, a chat completion of 32k tokens, is a
few hundred kB, the largest command output read as JSON (`docker inspect`, `ray list actors` of a big cluster) a
few MB."""

MAX_JSON_DEPTH = 64
"""The deepest nesting read: 64 levels. Real answers nest under 10 (`ray list jobs`: 4, `docker inspect`: 5);
anything walking a value (pydantic, `json.dumps` into results.json, `repr`) recurses once per level, so a bound
far below Python's recursion limit (1,000) keeps every later reader safe too."""

MAX_JSON_INT_DIGITS = 40
"""The longest integer read: 40 digits (above 2**128). No count, pid, token id or byte size the suite reads comes
near; Python refuses at 4,300 digits with a `ValueError` of its own, and arithmetic on a 4,000-digit int is slow."""

MAX_JSON_VALUES = 1_000_000
"""The most values read (containers, and the items and members a comma separates): a million. Memory follows the
count, not the characters: 16 Mi characters of `[{},{},...]` are 5.6 M dicts, 412 MiB parsed; a million values is
under 80 MiB whatever they are. A 256-host run's results.json holds about 250,000; `max_values` raises it for the
suite's own larger files."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = bytes(set(range(256)) - set(b"[]{}"))
_NOT_STRUCTURE = bytes(set(range(256)) - set(b"[]{},"))
_STEPS = bytes.maketrans(b"[{]},", b"\x01\x01\xff\xff\x00")  # +1, -1 and 0 as signed bytes


def nesting_depth(text: str) -> int:
    """The deepest nesting of brackets outside JSON strings, in one linear pass (16 Mi brackets: 1.7 s): strings
    and everything but brackets dropped by two regular expressions, each bracket then a signed byte summed.

    >>> nesting_depth('{"a": "[[[[", "b": [1]}'), nesting_depth("[[[[]]]]")
    (2, 4)
    """
    brackets = _STRING.sub("", text).encode("ascii", "ignore").translate(_STEPS, _NOT_BRACKET)
    return max(accumulate(array("b", brackets), initial=0))


def _structure(text: str, source: str, max_values: int) -> None:
    """ParseError naming `source` when `text` holds more than `max_values` values or nests deeper than
    `MAX_JSON_DEPTH` (brackets and commas outside strings, counted in C-speed passes; the depth summed only once
    the count is within bounds, so the worst text is refused in about 0.5 s)."""
    shape = _STRING.sub("", text).encode("ascii", "ignore").translate(None, _NOT_STRUCTURE)
    containers = shape.count(b"[") + shape.count(b"{")
    values = shape.count(b",") + containers - shape.count(b"[]") - shape.count(b"{}") + 1  # items, containers
    if values > max_values:
        raise ParseError(source, f"a JSON text of about {values} values, over the {max_values} the suite reads "
                         f"(refused before parsing, {len(text)} characters)", text[:200])
    depth = max(accumulate(array("b", shape.translate(_STEPS)), initial=0))
    if depth > MAX_JSON_DEPTH:
        raise ParseError(source, f"JSON nested too deep: {depth} levels, over the {MAX_JSON_DEPTH} the suite reads "
                         f"(refused before parsing, {len(text)} characters)", text[:200])


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits.lstrip('-'))} digits, over the {MAX_JSON_INT_DIGITS} "
                         f"the suite reads ({digits[:20]}...)")
    return int(digits)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} overflows a float")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON (a number the suite cannot compare)")


_DECODER = json.JSONDecoder(parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constant)
_DECODER_WITH_NAN = json.JSONDecoder(parse_int=_bounded_int, parse_float=_finite_float)
"""Made once: `json.loads(text, parse_int=...)` builds a decoder at every call (an SSE event: 3.2 us that way, 2.0 us
with this one, 2.6 us for a plain `json.loads`)."""


def read_json(text: str | bytes, source: str, *, max_chars: int = MAX_JSON_CHARS,
              max_values: int = MAX_JSON_VALUES, allow_nan: bool = False) -> Any:
    """The value of JSON `text` from `source` (a command, a request, a file), or ParseError naming `source` when
    it is over `MAX_JSON_CHARS` or `MAX_JSON_VALUES`, nests deeper than `MAX_JSON_DEPTH`, holds an integer longer
    than `MAX_JSON_INT_DIGITS` digits, NaN/Infinity or a number that overflows a float, or is not JSON.
    `max_chars`, `max_values`: larger caps for the suite's own files that may be larger (results.json of a big run,
    a recording line, `vllm bench` results). `allow_nan`: NaN and Infinity read as Python's json writes them (the
    suite's own results and baselines, `vllm bench` results: a measured value may be NaN)."""
    if isinstance(text, bytes | bytearray):
        if len(text) > 4 * max_chars:  # refused before decoding: utf-8 is at most 4 bytes a character
            raise ParseError(source, f"a JSON text of {len(text)} bytes, over the {max_chars // 2**20} Mi "
                             "characters the suite parses (refused before parsing)")
        text = text.decode("utf-8", errors="replace")
    if len(text) > max_chars:
        raise ParseError(source, f"a JSON text of {len(text)} characters, over the {max_chars // 2**20} Mi "
                         "the suite parses (refused before parsing)")
    # a few counts for the usual answer (too few brackets to nest too deep, too few commas to be too many values);
    # the linear passes only for a text past either
    containers = text.count("[") + text.count("{")
    if containers > MAX_JSON_DEPTH or containers + text.count(",") + 1 > max_values:  # counts in strings too: more
        _structure(text, source, max_values)
    try:
        return (_DECODER_WITH_NAN if allow_nan else _DECODER).decode(text)
    except RecursionError:  # not reached under MAX_JSON_DEPTH; kept so no path through here is a traceback
        raise ParseError(source, f"the JSON is nested too deep to read ({len(text)} characters)") from None
    except json.JSONDecodeError as error:
        raise ParseError(source, f"not JSON ({error})", text[max(0, error.pos - 100):error.pos + 100],
                         position=error.pos) from None
    except ValueError as error:  # a bound of parse_int/parse_float/parse_constant
        raise ParseError(source, f"not JSON the suite reads ({error})", text[:200]) from None
