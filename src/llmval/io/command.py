"""The one command vocabulary: read-only command templates, their typed arguments, and the allow-list.

A `Command` is one command family: a template whose literal text is fixed (program, options, pipes) and
whose `{fields}` are typed arguments. Every field names its `Kind` (`Command(..., unit=UNIT)`); a kind
says what a value may look like (a path, a unit name, a container name, a number) and never lets a value
start with `-`, so an inventory value can never become an option (`-delete`, `--host=`, `--privileged`,
`-oProxyCommand=`). The kinds are the inventory's own value shapes (`llmval.inventory.values`): what the
inventory accepts when it loads is what a command accepts when it renders. A value is refused twice: when
a command is rendered (`render` raises `UnsafeArgument`) and when a sent command is checked (`match` /
`is_read_only`): the literal text must be byte-identical to the template and each argument, once unquoted,
must satisfy its kind. Field suffixes: `{name}` one `shlex.quote`d argument, `{name*}` several, `{name~}`
an unquoted glob.

`render` returns a `Rendered` command: the text, the family and the arguments together, made only by
`render`. `llmval.io.transport.Connection.run` sends nothing else (outside `--launch`, whose inventory steps go
through `Connection.run_step`), so a command that is not a declared family cannot reach a host, recorded or
not; a replay answers it by family and arguments (`Rendered.key`).

    >>> FIND = Command("find", "find -L {path} -type f", path=PATH)
    >>> FIND.render(path="/models/x")
    'find -L /models/x -type f'
    >>> FIND.render(path="/models/x").key
    ('find', (('path', '/models/x'),))
    >>> FIND.match("find -L -delete -type f") is None
    True
"""

from __future__ import annotations

import functools
import re
import shlex
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..core.errors import UnsafeArgument
from ..inventory.values import CONTAINER, GLOB, KINDS, NUMBER, PATH, PATTERN, TEXT, UNIT, Kind

__all__ = ["COMMANDS", "CONTAINER", "GLOB", "KINDS", "NUMBER", "PATH", "PATTERN", "TEXT", "UNIT", "Command", "Kind",
           "Rendered", "UnsafeArgument", "allow", "command_key", "family_of", "is_read_only"]

SAFE_WORD_RE = r"[A-Za-z0-9_.:/@%+=,-]+"
"""A word `shlex.quote` leaves unquoted."""
ARG_RE = rf"(?:{SAFE_WORD_RE}|'[^']*')"
"""What one `shlex.quote`d argument looks like: a safe word, or one single-quoted string."""
GLOB_ARG_RE = GLOB.charset
_RENDERING = object()
"""Only `Command.render` holds this: a `Rendered` cannot be made from text."""

Key = tuple[str, tuple[tuple[str, Any], ...]]


def _key(name: str, args: Mapping[str, Any], suite_args: frozenset[str] = frozenset()) -> Key:
    """(family name, its arguments as text, sorted): equal for a rendering and the match of its text. The
    family's `suite_args` are left out: they say where this checkout keeps its files, not what the host is."""
    return name, tuple(sorted((k, tuple(str(x) for x in v) if isinstance(v, (list, tuple)) else str(v))
                              for k, v in args.items() if k not in suite_args))


class Rendered(str):
    """A declared `Command` rendered with checked arguments; made only by `Command.render`.

    It is its text (a `str`: recorded, printed and compared as such) and also carries `family` and `args`.
    Any change to the text (`+`, `replace`, slicing) gives a plain `str`, which `Connection.run` refuses."""

    family: Command
    args: Mapping[str, Any]

    def __new__(cls, text: str, family: Command, args: Mapping[str, Any], *, _via: object = None) -> Rendered:
        if _via is not _RENDERING:
            raise TypeError("a Rendered command is made only by Command.render(...)")
        self = super().__new__(cls, text)
        self.family = family
        self.args = MappingProxyType(dict(args))
        return self

    def __reduce__(self) -> tuple:
        return str, (str(self),)  # a copy is plain text: only render() makes a Rendered

    @property
    def key(self) -> Key:
        """(family name, arguments): what a replay answers by."""
        return _key(self.family.name, self.args, self.family.suite_args)


@dataclass(frozen=True)
class Command:
    """A read-only command template; `kinds` types each `{field}` (see the module docstring)."""

    name: str
    template: str
    kinds: dict[str, Kind] = field(default_factory=dict)
    derive: dict[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    """Arguments computed from the others (e.g. a message naming the paths): `render` fills them in and
    `match` refuses a command where they differ."""
    suite_args: frozenset[str] = frozenset()
    """Arguments that name where the running suite keeps its own files (the `--launch` log under its reports
    folder), not a fact of the host: a replay answers the family whatever they are, since the checkout that
    replays keeps its reports elsewhere than the one that recorded (issue 34.0)."""

    def __init__(self, name: str, template: str, /, *, derive: dict[str, Callable[[dict[str, Any]], Any]] | None = None,
                 suite_args: tuple[str, ...] = (), **kinds: Kind):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "derive", dict(derive or {}))
        object.__setattr__(self, "suite_args", frozenset(suite_args))
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

    def render(self, **args: Any) -> Rendered:
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
        used = {f.rstrip("*~") for f in self.fields}
        return Rendered(self.template.format_map(values), self, {k: v for k, v in args.items() if k in used},
                        _via=_RENDERING)

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

    def example(self) -> Rendered:
        """A rendering with each kind's example value (self-tests mutate it)."""
        args = {}
        for field_ in self.fields:
            key = field_.rstrip("*~")
            example = self.kinds[key].example
            args[key] = [example, example + ".b"] if field_.endswith("*") else example
        return self.render(**{k: v for k, v in args.items() if k not in self.derive})


COMMANDS: dict[str, Command] = {}
"""Every allowed command family by name: the commands of every host fact (`llmval.hostfacts`), the engine-log
reads and the readiness watch's reads. Filled when `llmval.hostfacts` is imported."""


def allow(*commands: Command) -> None:
    """Put command families on the read-only allow-list (a host fact's `@fact(...)` calls it for its own)."""
    for command in commands:
        known = COMMANDS.get(command.name)
        if known is not None and known.template != command.template:
            raise ValueError(f"two commands are named {command.name!r}: {known.template!r}, {command.template!r}")
        COMMANDS[command.name] = command


def is_declared(command: object) -> bool:
    """True when `command` is a `Rendered` of a family on the allow-list (what `Connection.run` sends)."""
    return isinstance(command, Rendered) and COMMANDS.get(command.family.name) is command.family


def is_read_only(command: str) -> bool:
    """True when `command` has the argv shape of one allowed command family (literal text identical,
    every argument a valid value of its kind): nothing appended, no `;`, no option smuggled in a value."""
    return family_of(command) is not None


def family_of(command: str) -> Command | None:
    """The allowed command family `command` belongs to, or None."""
    return next((c for c in COMMANDS.values() if c.match(command) is not None), None)


def command_key(command: str) -> Key | None:
    """(family name, arguments) of a command's text, as `Rendered.key` gives them; None when it is no
    allowed family (a `--launch` step's own text)."""
    for family in COMMANDS.values():
        args = family.match(command)
        if args is not None:
            return _key(family.name, args, family.suite_args)
    return None
