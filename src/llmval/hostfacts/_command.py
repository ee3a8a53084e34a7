"""Read-only command templates and their allowed argv shape.

A `Command` is one command family: a template whose literal text is fixed (program, options, pipes) and
whose `{fields}` are typed arguments. Every field names its `Kind` (`Command(..., unit=UNIT)`); a kind
says what a value may look like (an absolute or relative path, a unit name, a container name, a number)
and never lets a value start with `-`, so an inventory value can never become an option (`-delete`,
`--host=`, `--privileged`, `-oProxyCommand=`). A value is refused twice: when a command is rendered
(`render` raises `UnsafeArgument`) and when a sent command is checked (`match` / `is_read_only`): the
literal text must be byte-identical to the template and each argument, once unquoted, must satisfy its
kind. Field suffixes: `{name}` one `shlex.quote`d argument, `{name*}` several, `{name~}` an unquoted glob.

    >>> FIND = Command("find", "find -L {path} -type f", path=PATH)
    >>> FIND.render(path="/models/x")
    'find -L /models/x -type f'
    >>> FIND.match("find -L -delete -type f") is None
    True
"""

from __future__ import annotations

import functools
import re
import shlex
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import UnsafeArgument

SAFE_WORD_RE = r"[A-Za-z0-9_.:/@%+=,-]+"
"""A word `shlex.quote` leaves unquoted."""
ARG_RE = rf"(?:{SAFE_WORD_RE}|'[^']*')"
"""What one `shlex.quote`d argument looks like: a safe word, or one single-quoted string."""
GLOB_ARG_RE = r"[A-Za-z0-9_.:/@%+=,*?-]+"
MAX_VALUE_CHARS = 4096


@dataclass(frozen=True)
class Kind:
    """What one argument may be: a name, a charset (full match), and an example for self-tests."""

    name: str
    charset: str
    example: str
    extra: Callable[[str], str | None] | None = None
    """A further check: returns the reason a value is refused, or None."""

    def problem(self, value: str) -> str | None:
        """Why `value` may not be this kind of argument, or None when it may."""
        if not value:
            return "is empty"
        if len(value) > MAX_VALUE_CHARS:
            return f"is longer than {MAX_VALUE_CHARS} characters"
        if value.startswith("-"):
            return "starts with '-' (it would be read as an option)"
        if re.fullmatch(self.charset, value) is None:
            return f"is not a {self.name} (allowed: {self.charset})"
        return self.extra(value) if self.extra else None


PATH = Kind("path", r"[\w.,:/@%+=~ ()\[\]-]+", "/models/Qwen3.5-122B-A10B-FP8")
"""A file or folder path (absolute, or relative to the working directory): letters, digits, spaces and
`_.,:/@%+=~()[]-`; no quote, shell metacharacter or control character."""
GLOB = Kind("glob path", GLOB_ARG_RE, "/tmp/llmval-nccl/nccl.*.log")
UNIT = Kind("systemd unit name", r"[A-Za-z0-9:_.@\\-]+", "sglang.service")
CONTAINER = Kind("container name", r"[A-Za-z0-9][A-Za-z0-9_.-]*", "vllm-qwen35")
NUMBER = Kind("number", r"[0-9]{1,10}", "129")
PATTERN = Kind("process pattern", r"[^\x00-\x1f\x7f';`]+", "[v]llm.entrypoints.openai.api_server",
               lambda v: "holds `$(` (a command substitution)" if "$(" in v else None)
"""A `pgrep -f` regex (always passed single-quoted): no quote, `;`, backtick or `$(`."""
TEXT = Kind("message", r"[\w.,:/@%+=~ ()\[\]-]+", "reports/launch/start-vllm.log or /tmp/x.log")
"""Free text that is only ever printed (an error message of the command itself)."""


@dataclass(frozen=True)
class Command:
    """A read-only command template; `kinds` types each `{field}` (see the module docstring)."""

    name: str
    template: str
    kinds: dict[str, Kind] = field(default_factory=dict)
    derive: dict[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    """Arguments computed from the others (e.g. a message naming the paths): `render` fills them in and
    `match` refuses a command where they differ."""

    def __init__(self, name: str, template: str, /, *, derive: dict[str, Callable[[dict[str, Any]], Any]] | None = None,
                 **kinds: Kind):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "derive", dict(derive or {}))
        missing = {f.rstrip("*~") for f in self.fields} - kinds.keys()
        if missing:
            raise TypeError(f"command {name!r}: give the kind of {sorted(missing)} (e.g. path=PATH)")

    def __hash__(self) -> int:
        return hash((self.name, self.template))

    @functools.cached_property
    def fields(self) -> tuple[str, ...]:
        """The `{fields}` in order of appearance, with their suffixes."""
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.template) if f is not None)

    def _check(self, key: str, value: object) -> str:
        text = str(value)
        problem = self.kinds[key].problem(text)
        if problem is not None:
            raise UnsafeArgument(self.name, key, text, problem)
        return text

    def render(self, **args: Any) -> str:
        """The command with every argument checked against its kind and quoted; raises UnsafeArgument."""
        args = {**args, **{k: make(args) for k, make in self.derive.items()}}
        values = {}
        for field_ in self.fields:
            key = field_.rstrip("*~")
            value = args[key]
            if field_.endswith("*"):
                items = [self._check(key, v) for v in value]
                if not items:
                    raise UnsafeArgument(self.name, key, "", "is an empty list")
                values[field_] = " ".join(shlex.quote(v) for v in items)
            elif field_.endswith("~"):
                text = self._check(key, value)
                if not re.fullmatch(GLOB_ARG_RE, text):
                    raise UnsafeArgument(self.name, key, text, f"may only hold {GLOB_ARG_RE}")
                values[field_] = text
            else:
                values[field_] = shlex.quote(self._check(key, value))
        return self.template.format_map(values)

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """The literal text of the template, byte for byte, with one capture per argument span."""
        parts, seen = [], set()
        for literal, field_, _, _ in string.Formatter().parse(self.template):
            parts.append(re.escape(literal))
            if field_ is None:
                continue
            key = field_.rstrip("*~")
            if key in seen:
                parts.append(f"(?P={key})")
                continue
            seen.add(key)
            if field_.endswith("*"):
                parts.append(f"(?P<{key}>{ARG_RE}(?: {ARG_RE})*)")
            elif field_.endswith("~"):
                parts.append(f"(?P<{key}>{GLOB_ARG_RE})")
            else:
                parts.append(f"(?P<{key}>{ARG_RE})")
        return re.compile("".join(parts))

    def match(self, command: str) -> dict[str, Any] | None:
        """The arguments of `command` when it has this family's argv shape, else None.

        The literal text must equal the template's; each argument span is unquoted as the shell would
        and must be the declared number of words, each a valid value of its kind."""
        found = self.pattern.fullmatch(command)
        if found is None:
            return None
        args: dict[str, Any] = {}
        for field_ in dict.fromkeys(self.fields):
            key = field_.rstrip("*~")
            try:
                words = shlex.split(found[key])
            except ValueError:
                return None
            if not words or (not field_.endswith("*") and len(words) != 1):
                return None
            if any(self.kinds[key].problem(w) is not None for w in words):
                return None
            args[key] = words if field_.endswith("*") else words[0]
        if any(args[k] != make(args) for k, make in self.derive.items()):
            return None
        return args

    @property
    def shape(self) -> str:
        """The allowed argv shape, for people: the template with each field as `<kind>`."""
        out = []
        for literal, field_, _, _ in string.Formatter().parse(self.template):
            out.append(literal)
            if field_ is not None:
                kind = self.kinds[field_.rstrip("*~")].name
                out.append(f"<{kind}>..." if field_.endswith("*") else f"<{kind}>")
        return "".join(out)

    def example(self) -> str:
        """A rendering with each kind's example value (self-tests mutate it)."""
        args = {}
        for field_ in self.fields:
            key = field_.rstrip("*~")
            example = self.kinds[key].example
            args[key] = [example, example + ".b"] if field_.endswith("*") else example
        return self.render(**{k: v for k, v in args.items() if k not in self.derive})
