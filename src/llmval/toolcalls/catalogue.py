"""The tool-call catalogue: deterministic cases per category, each with the calls it must produce.

Categories (engine.md §3.5): `flat` (strings + an enum), `nested` (objects in arrays in objects),
`enum` (string and integer enums), `bigint` (integers near 2^53), `large_string` (8–64 KiB values full
of quotes, backslashes, newlines, unicode, `{}`, `<div>` and the literal `</parameter>`), `parallel`
(several calls in one answer). The same seed gives byte-identical requests, so recordings replay.

    >>> cases = build_catalogue(cases_per_category=2, large_kib=[8])
    >>> sorted({c.category for c in cases}) == sorted(CATEGORIES)
    True
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field

CATEGORIES = ("flat", "nested", "enum", "bigint", "large_string", "parallel")
MARKUP_SENTINELS = ("<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>")
"""Qwen3-Coder XML and hermes markup; none may reach `content` or `reasoning`."""

CITIES = ["Paris", "Boston", "Tokyo", "Lagos", "Lima", "Oslo", "Cairo", "Perth", "Quito", "Seoul",
          "Zürich", "São Paulo"]
UNITS = ["celsius", "fahrenheit"]
MODES = ["off", "eco", "normal", "turbo"]
PRIORITIES = [1, 2, 3, 5, 8]
BIG_INTS = [2**53 - 1, 2**53, 2**53 + 1, -(2**53 - 1), 2**53 - 7, 2**62 + 3]
NAMES = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov"]
STREETS = ["1 Main St", "22 Rue de Rivoli", "5 Chome-2 Ginza", "10 Downing St"]
SKUS = ["A-100", "B-200", "C-300", "D-400", "E-500"]
TRICKY_PIECES = ['"', '\\', "\\n", "\n", "\t", "é", "中文", "🚀", "{}", "[]", "<div>", "</div>", "</parameter>",
                 "<parameter=x>", "null", "true", "'", "\\\"", "&amp;", "→"]


@dataclass(frozen=True)
class ExpectedCall:
    """A call the model must make: its name and exactly these arguments."""

    name: str
    arguments: dict


@dataclass(frozen=True)
class ToolCase:
    """One request of the catalogue and the calls it must produce."""

    id: str
    category: str
    tools: list[dict]
    prompt: str
    expected: list[ExpectedCall]
    max_tokens: int
    meta: dict = field(default_factory=dict)

    def schema_for(self, name: str) -> dict | None:
        for tool in self.tools:
            if tool["function"]["name"] == name:
                return tool["function"]["parameters"]
        return None

    def request(self, *, strict: bool, tool_choice: str, temperature: float = 0.0) -> dict:
        """The chat-completions body (without model/stream) for this case."""
        tools = copy.deepcopy(self.tools)
        if strict:
            for tool in tools:
                tool["function"]["strict"] = True
        choice: object = tool_choice
        if tool_choice == "named" and len(self.expected) == 1:
            choice = {"type": "function", "function": {"name": self.expected[0].name}}
        elif tool_choice == "named":
            choice = "required"
        return {"messages": [{"role": "system", "content": "You call tools exactly as asked. Copy every value "
                              "exactly, character for character."},
                             {"role": "user", "content": self.prompt}],
                "tools": tools, "tool_choice": choice, "temperature": temperature, "max_tokens": self.max_tokens,
                "parallel_tool_calls": len(self.expected) > 1}


def _tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required,
                       "additionalProperties": False}}}


WEATHER = _tool("get_weather", "Current weather of a city.",
                {"city": {"type": "string"}, "unit": {"type": "string", "enum": UNITS}}, ["city", "unit"])
ORDER = _tool("create_order", "Create an order for a customer.", {
    "customer": {"type": "object", "properties": {
        "name": {"type": "string"},
        "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                    "required": ["street", "city"], "additionalProperties": False}},
        "required": ["name", "address"], "additionalProperties": False},
    "items": {"type": "array", "minItems": 1, "items": {
        "type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
        "required": ["sku", "qty"], "additionalProperties": False}},
}, ["customer", "items"])
MODE = _tool("set_mode", "Set the device mode and priority.",
             {"mode": {"type": "string", "enum": MODES}, "priority": {"type": "integer", "enum": PRIORITIES}},
             ["mode", "priority"])
RECORD = _tool("store_record", "Store a record under a 64-bit id.",
               {"record_id": {"type": "integer"}, "label": {"type": "string"}}, ["record_id", "label"])
WRITE = _tool("write_file", "Write text to a file.",
              {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"])


def tricky_text(size_bytes: int, rng: random.Random) -> str:
    """Deterministic text of about `size_bytes` UTF-8 bytes, dense in characters that break escaping."""
    parts: list[str] = []
    size = 0
    while size < size_bytes:
        piece = rng.choice(TRICKY_PIECES) if rng.random() < 0.5 else rng.choice(["line", "x = 1;", "ok", " "])
        parts.append(piece)
        size += len(piece.encode("utf-8"))
    return "".join(parts)


def _flat(i: int, rng: random.Random) -> ToolCase:
    city, unit = rng.choice(CITIES), rng.choice(UNITS)
    return ToolCase(f"flat-{i}", "flat", [WEATHER],
                    f'Call get_weather with city "{city}" and unit "{unit}".',
                    [ExpectedCall("get_weather", {"city": city, "unit": unit})], 120)


def _nested(i: int, rng: random.Random) -> ToolCase:
    args = {"customer": {"name": rng.choice(NAMES), "address": {"street": rng.choice(STREETS),
                                                                "city": rng.choice(CITIES)}},
            "items": [{"sku": sku, "qty": rng.randint(1, 9)} for sku in rng.sample(SKUS, 2)]}
    return ToolCase(f"nested-{i}", "nested", [ORDER],
                    f"Call create_order with exactly these arguments (JSON): {json.dumps(args, ensure_ascii=False)}",
                    [ExpectedCall("create_order", args)], 200)


def _enum(i: int, rng: random.Random) -> ToolCase:
    mode, priority = rng.choice(MODES), rng.choice(PRIORITIES)
    return ToolCase(f"enum-{i}", "enum", [MODE], f'Call set_mode with mode "{mode}" and priority {priority}.',
                    [ExpectedCall("set_mode", {"mode": mode, "priority": priority})], 80)


def _bigint(i: int, rng: random.Random) -> ToolCase:
    value, label = BIG_INTS[i % len(BIG_INTS)], f"rec-{rng.randint(100, 999)}"
    return ToolCase(f"bigint-{i}", "bigint", [RECORD],
                    f'Call store_record with record_id {value} and label "{label}".',
                    [ExpectedCall("store_record", {"record_id": value, "label": label})], 80)


def _large(i: int, kib: int, rng: random.Random) -> ToolCase:
    text = tricky_text(kib * 1024, rng)
    path = f"out/file-{kib}k.txt"
    prompt = (f'Call write_file with path "{path}" and content equal to the text between <<<BEGIN>>> and '
              f"<<<END>>>, exactly:\n<<<BEGIN>>>{text}<<<END>>>")
    # Room for the escaped value (~1 token per 2 bytes here) and the envelope.
    return ToolCase(f"large_string-{kib}k", "large_string", [WRITE], prompt,
                    [ExpectedCall("write_file", {"path": path, "content": text})],
                    max_tokens=kib * 1024 + 256, meta={"kib": kib})


def _parallel(i: int, rng: random.Random, calls: int) -> ToolCase:
    cities = rng.sample(CITIES, calls)
    unit = rng.choice(UNITS)
    return ToolCase(f"parallel-{i}", "parallel", [WEATHER, MODE],
                    f"Call get_weather once for each of these {calls} cities, all in one answer, with unit "
                    f'"{unit}": ' + ", ".join(f'"{c}"' for c in cities) + ".",
                    [ExpectedCall("get_weather", {"city": c, "unit": unit}) for c in cities], 60 * calls + 40)


def build_catalogue(*, cases_per_category: int = 4, large_kib: list[int] | tuple[int, ...] = (8,),
                    parallel_calls: int = 5, seed: int = 0, categories: tuple[str, ...] = CATEGORIES,
                    max_tokens_cap: int | None = None) -> list[ToolCase]:
    """Every case of the catalogue, deterministic for a seed. `max_tokens_cap` bounds generation (the
    served context); a large case whose value cannot fit is still sent and must come back truncated-flagged."""
    unknown = sorted(set(categories) - set(CATEGORIES))
    if unknown:
        raise ValueError(f"unknown tool-call categories {unknown}; valid: {list(CATEGORIES)}")
    cases: list[ToolCase] = []
    for category in categories:
        rng = random.Random(f"{seed}:{category}")
        if category == "large_string":
            cases += [_large(i, kib, rng) for i, kib in enumerate(large_kib)]
            continue
        for i in range(cases_per_category):
            if category == "parallel":
                cases.append(_parallel(i, rng, parallel_calls))
            else:
                cases.append({"flat": _flat, "nested": _nested, "enum": _enum, "bigint": _bigint}[category](i, rng))
    if max_tokens_cap is not None:
        cases = [c if c.max_tokens <= max_tokens_cap else
                 ToolCase(c.id, c.category, c.tools, c.prompt, c.expected, max_tokens_cap, c.meta) for c in cases]
    return cases
