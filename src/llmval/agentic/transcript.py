"""Seeded agent transcripts with one fact deep inside a tool result, sized to a token budget.

A transcript is what an agent client sends after working for a while: a system prompt, the task, then
prior steps (an assistant turn that calls `list_files`, `read_file` or `run_command`, and the tool's
result: a file listing, a source file, a config, a log tail), then one last user turn asking for one tool
call. One step's result holds the needle (a config value, a function's `def` line, an error code); two
others hold near-misses (the same key in another file and in an older revision, the same function in a
legacy module, the same job in another worker's log or in a rotated older log). The question names the
source precisely, so exactly one value is right.

Everything is drawn from `random.Random(seed)` (never `hash()`, the clock or file order): the same seed
gives byte-identical messages everywhere. The filler steps are a stream; a prompt uses its first `n`
steps with the needle and distractor steps inserted at their depths, and `needle.builder.fit_units` finds
the largest `n` that fits the budget under the server's tokenizer.

>>> t = build_transcript(7, "config", depth=0.5, stream_steps=20)
>>> messages = t.messages(10)
>>> sum(m["content"].count(t.needle.value) for m in messages)
1
"""

from __future__ import annotations

import dataclasses
import json
import random
import string
from collections.abc import Callable
from typing import Literal

from ..core.errors import LlmvalError
from ._corpus import (
    BODY_LINES,
    CONFIG_KEYS,
    ENV_NAMES,
    LOG_MESSAGES,
    MODULES,
    NOUNS,
    PACKAGES,
    PARAMS,
    RETURNS,
    SERVICES,
    TASKS,
    VERBS,
    WORKERS,
)

NeedleKind = Literal["config", "signature", "error_code"]
NEEDLE_KINDS: tuple[NeedleKind, ...] = ("config", "signature", "error_code")
SYSTEM_PROMPT = ("You are a coding agent working in the repository `{package}`. You inspect files and logs with "
                 "the tools and act with them. When the user asks for a tool call, make exactly that one call, "
                 "and copy every value exactly as it appears in the tool results.")


def _tool(name: str, description: str, properties: dict[str, str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {k: {"type": "string", "description": d}
                                                        for k, d in properties.items()},
                       "required": list(properties), "additionalProperties": False}}}


AGENT_TOOLS = (
    _tool("list_files", "List the files under a directory of the repository.", {"path": "directory"}),
    _tool("read_file", "Read a file of the repository.", {"path": "file path"}),
    _tool("run_command", "Run a read-only shell command in the repository.", {"command": "the command line"}),
)
TARGET_TOOLS = {
    "config": _tool("set_env", "Set an environment variable of the production deployment.",
                    {"name": "variable name", "value": "the value, as a string"}),
    "signature": _tool("write_stub", "Write a type stub holding one function signature.",
                       {"path": "stub file path", "signature": "the def line, without the trailing colon"}),
    "error_code": _tool("open_incident", "Open an incident for a service with the error code it logged.",
                        {"service": "service or worker name", "error_code": "the error code, as logged"}),
}


class TranscriptError(LlmvalError):
    """A transcript cannot be built as asked (too few steps for the budget, or a builder bug)."""


@dataclasses.dataclass(frozen=True)
class Step:
    """One prior agent turn: what the assistant said, the tool call it made, and the tool's result."""

    say: str
    tool: str
    arguments: dict
    result: str

    def messages(self, call_id: str) -> list[dict]:
        call = {"id": call_id, "type": "function",
                "function": {"name": self.tool, "arguments": json.dumps(self.arguments, ensure_ascii=False)}}
        return [{"role": "assistant", "content": self.say, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": self.result}]


@dataclasses.dataclass(frozen=True)
class Needle:
    """The fact to carry: which tool to call, which argument must equal `value`, and the near-misses."""

    kind: NeedleKind
    value: str
    tool: dict
    argument: str
    fixed: dict
    """The call's other arguments, given in the question."""
    question: str
    source: str
    """Where the value is (`config/prod/api.toml`)."""
    distractors: tuple[str, ...]
    """Near-miss values planted elsewhere: (same thing in another file, an older value)."""

    @property
    def tool_name(self) -> str:
        return self.tool["function"]["name"]

    @property
    def expected_arguments(self) -> dict:
        return {**self.fixed, self.argument: self.value}


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a special step went: before filler step `index` of `n` (0 = first, n = after the last)."""

    role: str
    """needle, or distractor-1 / distractor-2."""
    depth: float
    index: int


@dataclasses.dataclass(frozen=True)
class Transcript:
    """A filler step stream plus the needle and distractor steps, at their depths."""

    system: str
    task: str
    steps: tuple[Step, ...]
    needle: Needle
    specials: tuple[tuple[str, float, Step], ...]
    """(role, depth, step): the needle's step first, then its distractors'."""

    @property
    def tools(self) -> list[dict]:
        """Every tool of the request: the agent's three, then the one the question asks for."""
        return [*AGENT_TOOLS, self.needle.tool]

    def placements(self, n: int) -> list[Placement]:
        return [Placement(role, depth, round(depth * n)) for role, depth, _ in self.specials]

    def needle_depth(self, n: int) -> float:
        """The needle step's realised depth: its position among the n + 3 steps, 0..1."""
        index = self.placements(n)[0].index
        before = index + sum(1 for p in self.placements(n)[1:] if p.index < index)
        total = n + len(self.specials) - 1
        return round(before / total, 4) if total else 0.0

    def ordered_steps(self, n: int) -> list[tuple[str, Step]]:
        """The steps of a prompt of size `n`, in order: ("filler" or a special's role, step)."""
        if n > len(self.steps):
            raise TranscriptError(f"the transcript stream has {len(self.steps)} filler steps; {n} were asked for")
        by_index: dict[int, list[tuple[str, Step]]] = {}
        for placement, (role, _, step) in zip(self.placements(n), self.specials, strict=True):
            by_index.setdefault(placement.index, []).append((role, step))
        out: list[tuple[str, Step]] = []
        for i in range(n + 1):
            out.extend(by_index.get(i, ()))
            if i < n:
                out.append(("filler", self.steps[i]))
        return out

    def messages(self, n: int) -> list[dict]:
        """The chat request's messages with the first `n` filler steps."""
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": self.task}]
        for k, (_, step) in enumerate(self.ordered_steps(n)):
            messages += step.messages(f"call_{k:04d}")
        messages.append({"role": "user", "content": self.needle.question})
        return messages


# ---- filler steps ----------------------------------------------------------------------------------------
def _function(name: str, params: list[tuple[str, str, str | None]], returns: str) -> str:
    args = ", ".join(f"{p}: {t}" + (f" = {d}" if d is not None else "") for p, t, d in params)
    return f"def {name}({args}) -> {returns}"


def _params(rng: random.Random, count: int) -> list[tuple[str, str, str | None]]:
    chosen = rng.sample(PARAMS, count)
    return sorted(chosen, key=lambda p: p[2] is not None)  # parameters without defaults first


def _source(rng: random.Random, package: str, module: str, functions: list[str]) -> str:
    lines = [f'"""{module.capitalize()} helpers of {package}."""', "", "from __future__ import annotations", "",
             "import logging", "", "logger = logging.getLogger(__name__)", ""]
    for line in functions:
        lines += ["", f"{line}:", f'    """{rng.choice(VERBS).capitalize()} the {rng.choice(NOUNS)}s."""']
        lines += [f"    {rng.choice(BODY_LINES)}" for _ in range(rng.randint(2, 5))]
    return "\n".join(lines) + "\n"


def _random_functions(rng: random.Random, avoid: str, count: int) -> list[str]:
    out = []
    while len(out) < count:
        name = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
        if name != avoid:
            out.append(_function(name, _params(rng, rng.randint(1, 3)), rng.choice(RETURNS)))
    return out


def _config(rng: random.Random, service: str, values: dict[str, str]) -> str:
    lines = [f"# {service} service configuration", "[service]", f'name = "{service}"', ""]
    lines += ["[limits]"] + [f"{k} = {v}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def _filler_values(rng: random.Random, avoid_key: str) -> dict[str, str]:
    keys = rng.sample([k for k in CONFIG_KEYS if k != avoid_key], rng.randint(4, 7))
    return {k: str(rng.randint(1, 9999)) for k in keys}  # at most 4 digits: never a 5-digit needle value


def _log_line(rng: random.Random, second: int, service: str) -> str:
    level = "WARN" if rng.random() < 0.15 else "INFO"
    return (f"2026-11-29T{9 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z {level} {service} "
            f"{rng.choice(LOG_MESSAGES)} ({rng.randint(1, 900)} ms)")


def _log(rng: random.Random, service: str, extra: tuple[int, str] | None = None, lines: tuple[int, int] = (8, 16)
         ) -> str:
    count = rng.randint(*lines)
    start = rng.randint(0, 30000)
    lines = [_log_line(rng, start + 7 * i, service) for i in range(count)]
    if extra is not None:
        at, line = extra
        lines.insert(min(at, len(lines)), line)
    return "\n".join(lines) + "\n"


def _filler_step(rng: random.Random, package: str, avoid: dict[str, str]) -> Step:
    kind = rng.choice(("list", "source", "source", "config", "log"))
    if kind == "list":
        folder = rng.choice((f"src/{package}", "config", "logs", "tests", "docs"))
        names = sorted({f"{folder}/{rng.choice(MODULES)}{rng.choice(('.py', '.toml', '.md', '.log'))}"
                        for _ in range(rng.randint(6, 14))})
        listing = "\n".join(f"{rng.randint(120, 9800):>5}  {name}" for name in names)
        return Step(f"Listing {folder}.", "list_files", {"path": folder}, listing + "\n")
    if kind == "source":
        module = rng.choice(MODULES)
        path = f"src/{package}/{rng.choice(('', 'util/', 'io/'))}{module}.py"
        text = _source(rng, package, module, _random_functions(rng, avoid["function"], rng.randint(2, 4)))
        return Step(f"Reading {path}.", "read_file", {"path": path}, text)
    if kind == "config":
        service = rng.choice(SERVICES)
        path = f"config/{rng.choice(('dev', 'canary', 'local'))}/{service}.toml"
        return Step(f"Checking {path}.", "read_file", {"path": path},
                    _config(rng, service, _filler_values(rng, avoid["key"])))
    service = rng.choice(SERVICES)
    command = f"tail -n 20 logs/{service}.log"
    return Step("Looking at the recent log.", "run_command", {"command": command}, _log(rng, service))


# ---- needles ---------------------------------------------------------------------------------------------
def _distinct_ints(rng: random.Random, low: int, high: int, count: int) -> list[int]:
    out: list[int] = []
    while len(out) < count:
        value = rng.randint(low, high)
        if value not in out:
            out.append(value)
    return out


def _near_miss_digits(rng: random.Random, value: str, avoid: set[str]) -> str:
    """The same digits with two neighbours swapped (or one digit changed): a value one misreads."""
    for _ in range(50):
        i = rng.randrange(len(value) - 1)
        swapped = value[:i] + value[i + 1] + value[i] + value[i + 2:]
        if swapped != value and swapped[0] != "0" and swapped not in avoid:
            return swapped
        digit = str((int(value[i + 1]) + rng.randint(1, 8)) % 10)
        changed = value[:i + 1] + digit + value[i + 2:]
        if changed not in avoid and changed != value:
            return changed
    raise TranscriptError(f"no near-miss of {value!r}")  # pragma: no cover - 50 draws never all collide


def _config_needle(rng: random.Random, package: str) -> tuple[Needle, list[Step], dict[str, str]]:
    service, key = rng.choice(SERVICES), rng.choice(CONFIG_KEYS)
    value = str(rng.randint(10000, 99999))
    staging = _near_miss_digits(rng, value, {value})
    older = _near_miss_digits(rng, value, {value, staging})
    others = _filler_values(rng, key)
    path = f"config/prod/{service}.toml"

    def config(v: str) -> str:
        return _config(rng, service, {**dict(list(others.items())[:2]), key: v, **dict(list(others.items())[2:])})

    steps = [Step(f"Reading {path}.", "read_file", {"path": path}, config(value)),
             Step(f"Comparing with config/staging/{service}.toml.", "read_file",
                  {"path": f"config/staging/{service}.toml"}, config(staging)),
             Step("Checking what the production config held a few commits ago.", "run_command",
                  {"command": f"git show HEAD~3:{path}"}, config(older))]
    env = ENV_NAMES[key]
    question = (f'Set the environment variable {env} for the production {service} service: call set_env with name '
                f'"{env}" and value set to {key} from {path} (the current file as read above, not staging and not '
                "an older revision), as a string, exactly.")
    needle = Needle("config", value, TARGET_TOOLS["config"], "value", {"name": env}, question, path,
                    (staging, older))
    return needle, steps, {"key": key, "function": ""}


def _signature_needle(rng: random.Random, package: str) -> tuple[Needle, list[Step], dict[str, str]]:
    module, name = rng.choice(MODULES), f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
    params = _params(rng, rng.randint(2, 4))
    returns = rng.choice(RETURNS)
    value = _function(name, params, returns)
    spare = [p for p in PARAMS if p not in params]
    # distinct by construction: the legacy copy swaps the last parameter, the older revision lacks it
    legacy = _function(name, sorted([*params[:-1], rng.choice(spare)], key=lambda p: p[2] is not None), returns)
    older = _function(name, params[:-1], returns)
    path = f"src/{package}/{module}.py"

    def source(line: str) -> str:
        functions = _random_functions(rng, name, 2)
        return _source(rng, package, module, [functions[0], line, functions[1]])

    steps = [Step(f"Reading {path}.", "read_file", {"path": path}, source(value)),
             Step(f"There is also a legacy copy, src/{package}/legacy/{module}.py.", "read_file",
                  {"path": f"src/{package}/legacy/{module}.py"}, source(legacy)),
             Step("Checking the module as it was a few commits ago.", "run_command",
                  {"command": f"git show HEAD~5:{path}"}, source(older))]
    question = (f'Call write_stub with path "stubs/{package}/{module}.pyi" and signature set to the def line of '
                f"{name} in {path} (the current file as read above, not the legacy module and not an older "
                "revision), exactly as written there, without the trailing colon.")
    needle = Needle("signature", value, TARGET_TOOLS["signature"], "signature",
                    {"path": f"stubs/{package}/{module}.pyi"}, question, path, (legacy, older))
    return needle, steps, {"key": "", "function": name}


def _error_code(rng: random.Random) -> str:
    return f"E{rng.randint(1000, 9999)}-{rng.choice(string.ascii_uppercase)}{rng.choice(string.ascii_uppercase)}"


def _error_code_needle(rng: random.Random, package: str) -> tuple[Needle, list[Step], dict[str, str]]:
    worker, other = rng.sample(WORKERS, 2)
    job = rng.randint(1000, 9999)
    codes: list[str] = []
    while len(codes) < 3:
        code = _error_code(rng)
        if code not in codes:
            codes.append(code)
    value, elsewhere, older = codes

    def log(who: str, code: str) -> str:
        line = f"2026-11-29T{rng.randint(10, 18)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}Z ERROR {who} " \
               f"job={job} failed: code={code} (shard {rng.randint(1, 64)})"
        return _log(rng, who, extra=(rng.randint(1, 4), line), lines=(3, 6))  # small: a 1k prompt holds all three

    path = f"logs/{worker}.log"
    steps = [Step(f"Reading the end of {path}.", "run_command", {"command": f"tail -n 20 {path}"}, log(worker, value)),
             Step(f"{other} ran job {job} too; checking its log.", "run_command",
                  {"command": f"tail -n 20 logs/{other}.log"}, log(other, elsewhere)),
             Step(f"Checking the rotated log {path}.1.", "read_file", {"path": f"{path}.1"}, log(worker, older))]
    question = (f'Call open_incident with service "{worker}" and error_code set to the code {worker} logged for job '
                f"{job} in {path} (the current log, not the rotated {path}.1 and not another worker's log), "
                "exactly as logged.")
    needle = Needle("error_code", value, TARGET_TOOLS["error_code"], "error_code", {"service": worker}, question,
                    path, (elsewhere, older))
    return needle, steps, {"key": "", "function": ""}


NEEDLE_BUILDERS: dict[str, Callable[[random.Random, str], tuple[Needle, list[Step], dict[str, str]]]] = {
    "config": _config_needle, "signature": _signature_needle, "error_code": _error_code_needle}


def build_transcript(seed: int, kind: NeedleKind, depth: float, stream_steps: int) -> Transcript:
    """The transcript of a seed: the needle of `kind` at `depth`, its two distractors at seeded depths, and
    `stream_steps` filler steps (a prompt uses a prefix of them)."""
    if kind not in NEEDLE_BUILDERS:
        raise TranscriptError(f"unknown needle kind {kind!r}; valid: {sorted(NEEDLE_BUILDERS)}")
    rng = random.Random(seed)
    package = rng.choice(PACKAGES)
    needle, (needle_step, *distractor_steps), avoid = NEEDLE_BUILDERS[kind](rng, package)
    specials = [("needle", depth, needle_step)]
    specials += [(f"distractor-{i + 1}", round(rng.random(), 4), step) for i, step in enumerate(distractor_steps)]
    steps = tuple(_filler_step(rng, package, avoid) for _ in range(stream_steps))
    return Transcript(SYSTEM_PROMPT.format(package=package), rng.choice(TASKS).format(package=package), steps,
                      needle, tuple(specials))


def occurrences(messages: list[dict], value: str) -> int:
    """How many times `value` occurs in the messages' text (contents and prior call arguments)."""
    return json.dumps(messages, ensure_ascii=False).count(json.dumps(value, ensure_ascii=False)[1:-1])
