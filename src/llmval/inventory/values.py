"""Value types for inventory fields that reach a host command, a file name or a URL.

Every value the suite later pastes into a command (quoted, but still an argument to a tool that parses
options) is checked here, when the inventory loads, so that no inventory can turn a read-only check into
a writing one: `model_files.path = "-delete"` would make `find -L -delete ...`, a unit `--host=x` would
make `systemctl show --host=x`, an ssh address `-oProxyCommand=...` would be an ssh option. The rules:
paths are absolute (or, on a local host, relative to the working directory) and never start with `-`;
unit, container, interface and image names use a strict character set that cannot start with `-`;
environment variable names are identifiers; no value holds a NUL or another control character.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Control characters (and bidi overrides) never allowed anywhere; tab, newline and CR only in free text."""

NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""Inventory names (hosts, endpoints, decisions, blockers, groups): a letter or digit first, at most 64."""
INTERFACE_RE = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}$"
"""Linux interface names: at most 15 characters (IFNAMSIZ), no `/` or blanks."""
IMAGE_RE = r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,254}$"
"""docker image references (`registry:5000/org/name:tag@sha256:...`)."""
ENV_KEY_RE = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
"""Environment variable names: identifiers."""
USER_RE = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$"
ADDRESS_RE = r"^[A-Za-z0-9\[][A-Za-z0-9_.:%\[\]-]{0,252}$"
"""ssh addresses: a host name or an IPv4/IPv6 address; never an ssh option."""
BUS_ID_RE = r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$"
GPU_UUID_RE = r"^(GPU|MIG)-[0-9A-Za-z-]{8,64}$"

MAX_PATH = 4096
MAX_VALUE_CHARS = 4096


@dataclass(frozen=True)
class Kind:
    """The shape of one value that reaches a host command, defined once: the inventory validates it when it
    loads (`UnitName`, `HostPath`, ...) and a `llmval.io.command.Command` argument of this kind refuses it at render
    and at check. A name, a charset (full match), an example for self-tests, and an optional further check."""

    name: str
    charset: str
    example: str
    extra: Callable[[str], str | None] | None = None
    """A further check: returns the reason a value is refused, or None."""

    def problem(self, value: str) -> str | None:
        """Why `value` may not be this kind of value, or None when it may."""
        if not value:
            return "is empty"
        if len(value) > MAX_VALUE_CHARS:
            return f"is longer than {MAX_VALUE_CHARS} characters"
        if value.startswith("-"):
            return "starts with '-' (it would be read as an option)"
        if re.fullmatch(self.charset, value) is None:
            return f"is not a {self.name} (allowed: {self.charset})"
        return self.extra(value) if self.extra else None

    def validate(self, value: str) -> str:
        """`value`, or ValueError saying why it is not this kind (a pydantic AfterValidator)."""
        problem = self.problem(value)
        if problem is not None:
            raise ValueError(f"{printable_value(value)} {problem}")
        return value


def printable_value(value: str) -> str:
    return repr(value[:80])


PATH = Kind("path", r"[\w.,:/@%+=~ ()\[\]-]+", "/models/Qwen3.5-122B-A10B-FP8")
"""A file or folder path (absolute, or relative to the working directory): letters, digits, spaces and
`_.,:/@%+=~()[]-`; no quote, shell metacharacter or control character."""
GLOB = Kind("glob path", r"[A-Za-z0-9_.:/@%+=,*?-]+", "/tmp/llmval-nccl/nccl.*.log")
"""A path with `*`/`?` wildcards, passed unquoted so that the host's shell expands it."""
UNIT = Kind("systemd unit name", r"[A-Za-z0-9][A-Za-z0-9_.@:-]{0,254}", "sglang.service")
"""systemd unit names (`sglang.service`, `getty@tty1.service`)."""
CONTAINER = Kind("docker container name", r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", "vllm-qwen35")
"""docker's own rule for container names, bounded."""
NUMBER = Kind("number", r"[0-9]{1,10}", "129")
PATTERN = Kind("process pattern", r"[^\s\x00-\x1f\x7f';`-][^\x00-\x1f\x7f';`]{0,255}",
               "[v]llm.entrypoints.openai.api_server",
               lambda v: "holds `$(` (a command substitution)" if "$(" in v else None)
"""A `pgrep -f` regex (always passed single-quoted): not an option, one line, bounded, no quote, `;`, backtick
or `$(`."""
TEXT = Kind("message", r"[\w.,:/@%+=~ ()\[\]-]+", "reports/launch/start-vllm.log or /tmp/x.log")
"""Free text that is only ever printed (an error message of the command itself)."""
PIDS = Kind("comma-separated pid list", r"[0-9]{1,10}(?:,[0-9]{1,10}){0,255}", "4242,4101")
"""Process ids for `ps -p` (found on the host by an earlier read, never from the inventory)."""
KINDS: tuple[Kind, ...] = (PATH, GLOB, UNIT, CONTAINER, NUMBER, PATTERN, TEXT, PIDS)
"""Every kind of command argument (`llmval.io.command` re-exports them)."""
_ANY_PATH = Kind("path", r"[^\x00-\x1f\x7f]+", "~/.ssh/id_ed25519")
"""A path on this machine only (an ssh identity file): never a command argument on a host."""


def _no_control(text: str, *, free_text: bool = False) -> str:
    allowed = "\t\n\r" if free_text else ""
    bad = [c for c in CONTROL_RE.findall(text) if c not in allowed]
    if not free_text and any(c in text for c in "\t\n\r"):
        bad.append("\\n or \\t")
    if bad:
        raise ValueError(f"holds control characters ({', '.join(sorted({repr(c) for c in bad}))}); remove them")
    return text


def _checked_path(value: str, kind: Kind = PATH) -> str:
    if not value:
        raise ValueError("is empty; give a path")
    if value.startswith("-"):
        raise ValueError(f"{value[:80]!r} starts with '-', so a command would read it as an option; give an "
                         "absolute path")
    if "\x00" in value:
        raise ValueError("holds a NUL byte")
    return kind.validate(_no_control(value))


def _absolute(value: str, kind: Kind = PATH) -> str:
    _checked_path(value, kind)
    if not value.startswith("/"):
        raise ValueError(f"{value[:80]!r} is not an absolute path (start it with '/')")
    return value


def _user_path(value: str) -> str:
    """A path on this machine: absolute or `~/...` (identity files, ssh configs)."""
    _checked_path(value, _ANY_PATH)
    if not value.startswith(("/", "~/")):
        raise ValueError(f"{value[:80]!r} is neither absolute nor under ~/ ")
    return value


def _finite(value: float) -> float:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


Name = Annotated[str, StringConstraints(pattern=NAME_RE)]


def shaped(kind: Kind) -> Any:
    """The inventory type of values of `kind`: its charset in the JSON schema, its own check when loading."""
    return Annotated[str, StringConstraints(pattern=f"^{kind.charset}$"), AfterValidator(kind.validate)]


UnitName = shaped(UNIT)
ContainerName = shaped(CONTAINER)
InterfaceName = Annotated[str, StringConstraints(pattern=INTERFACE_RE)]
ImageName = Annotated[str, StringConstraints(pattern=IMAGE_RE)]
EnvKey = Annotated[str, StringConstraints(pattern=ENV_KEY_RE)]
UserName = Annotated[str, StringConstraints(pattern=USER_RE)]
Address = Annotated[str, StringConstraints(pattern=ADDRESS_RE)]
BusId = Annotated[str, StringConstraints(pattern=BUS_ID_RE)]
GpuUuid = Annotated[str, StringConstraints(pattern=GPU_UUID_RE)]
ProcessPattern = shaped(PATTERN)
AbsolutePath = Annotated[str, StringConstraints(max_length=MAX_PATH), AfterValidator(_absolute)]
HostPath = Annotated[str, StringConstraints(max_length=MAX_PATH), AfterValidator(_checked_path)]
"""A path on an inventory host: absolute (required for remote hosts, checked by HostSpec) or, on a local
host, relative to the working directory; never option-shaped."""
UserPath = Annotated[str, StringConstraints(max_length=MAX_PATH), AfterValidator(_user_path)]
Label = Annotated[str, StringConstraints(min_length=1, max_length=256), AfterValidator(_no_control)]
"""A short one-line text (a model id, a parser name, a platform)."""
Text = Annotated[str, StringConstraints(max_length=20000),
                 AfterValidator(lambda v: _no_control(v, free_text=True))]
"""Free text (goals, reasons, hints, shell commands of [launch]): tabs and newlines allowed."""
Seconds = Annotated[float, Field(gt=0, le=86400), AfterValidator(_finite)]
"""A duration: positive, finite, at most a day."""
Rate = Annotated[float, Field(ge=0, le=1), AfterValidator(_finite)]
"""A share in [0, 1]."""


SOURCE_KINDS: dict[str, tuple[Kind, str]] = {
    "systemd": (UNIT, "a systemd unit name"),
    "journal": (UNIT, "a systemd unit name"),
    "docker": (CONTAINER, "a docker container name"),
    "process": (PATTERN, "a pgrep -f pattern (not starting with '-' or a blank)"),
    "file": (PATH, "an absolute path"),
}


def check_source(value: str, kinds: tuple[str, ...], *, bare: tuple[str, ...] = (), file_kind: Kind = PATH) -> str:
    """`kind:value` with a known kind and a value of that kind's shape (the `Kind` its command takes);
    `bare` lists values without ':'; `file_kind` is GLOB where the file is read through a glob."""
    if value in bare:
        return value
    kind, sep, target = value.partition(":")
    valid = [f"{k}:<{SOURCE_KINDS[k][1]}>" for k in kinds] + list(bare)
    if not sep or kind not in kinds:
        raise ValueError(f"unknown source {value[:80]!r}; valid: {valid}")
    shape, what = SOURCE_KINDS[kind]
    if kind == "file":
        _absolute(target, file_kind)
    elif shape.problem(target) is not None:
        raise ValueError(f"{kind}: needs {what}; got {target[:80]!r} ({shape.problem(target)})")
    return value


def check_base_url(value: object) -> object:
    """A root URL: http(s), a host, a port in 1-65535 if given, no user:password@ (use api_key_env)."""
    if not isinstance(value, str):
        return value
    _no_control(value)
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"}:
        raise ValueError(f"{value[:80]!r}: the scheme must be http or https")
    if parts.username is not None or parts.password is not None:
        raise ValueError("holds user:password@; credentials never go in an inventory: name the variable that "
                         "holds the key in api_key_env")
    if not parts.hostname or parts.netloc.startswith(("/", "-")) or parts.hostname.startswith("-"):
        raise ValueError(f"{value[:80]!r} has no host (e.g. http://127.0.0.1:8000)")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{value[:80]!r}: the port must be a number in 1-65535") from None
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{value[:80]!r}: the port must be in 1-65535")
    if parts.query or parts.fragment:
        raise ValueError(f"{value[:80]!r}: a root URL has no ?query or #fragment")
    return value


def url_port(url: str) -> int:
    """The TCP port an http(s) URL reaches: the one it names, else its scheme's (443 for https, 80 for http).

    >>> url_port("http://127.0.0.1:8000/v1"), url_port("https://api.example"), url_port("http://[::1]")
    (8000, 443, 80)
    """
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


BaseUrlText = BeforeValidator(check_base_url)
