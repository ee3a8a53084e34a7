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
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Control characters (and bidi overrides) never allowed anywhere; tab, newline and CR only in free text."""

NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""Inventory names (hosts, endpoints, decisions, blockers, groups): a letter or digit first, at most 64."""
UNIT_RE = r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,254}$"
"""systemd unit names (`sglang.service`, `getty@tty1.service`)."""
CONTAINER_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
"""docker's own rule for container names, bounded."""
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
PATTERN_RE = r"^[^\s-][^\x00-\x1f\x7f]{0,255}$"
"""A `pgrep -f` pattern: not an option, one line, bounded."""

MAX_PATH = 4096


def _no_control(text: str, *, free_text: bool = False) -> str:
    allowed = "\t\n\r" if free_text else ""
    bad = [c for c in CONTROL_RE.findall(text) if c not in allowed]
    if not free_text and any(c in text for c in "\t\n\r"):
        bad.append("\\n or \\t")
    if bad:
        raise ValueError(f"holds control characters ({', '.join(sorted({repr(c) for c in bad}))}); remove them")
    return text


def _checked_path(value: str) -> str:
    if not value:
        raise ValueError("is empty; give a path")
    if value.startswith("-"):
        raise ValueError(f"{value[:80]!r} starts with '-', so a command would read it as an option; give an "
                         "absolute path")
    if "\x00" in value:
        raise ValueError("holds a NUL byte")
    return _no_control(value)


def _absolute(value: str) -> str:
    _checked_path(value)
    if not value.startswith("/"):
        raise ValueError(f"{value[:80]!r} is not an absolute path (start it with '/')")
    return value


def _user_path(value: str) -> str:
    """A path on this machine: absolute or `~/...` (identity files, ssh configs)."""
    _checked_path(value)
    if not value.startswith(("/", "~/")):
        raise ValueError(f"{value[:80]!r} is neither absolute nor under ~/ ")
    return value


def _finite(value: float) -> float:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


Name = Annotated[str, StringConstraints(pattern=NAME_RE)]
UnitName = Annotated[str, StringConstraints(pattern=UNIT_RE)]
ContainerName = Annotated[str, StringConstraints(pattern=CONTAINER_RE)]
InterfaceName = Annotated[str, StringConstraints(pattern=INTERFACE_RE)]
ImageName = Annotated[str, StringConstraints(pattern=IMAGE_RE)]
EnvKey = Annotated[str, StringConstraints(pattern=ENV_KEY_RE)]
UserName = Annotated[str, StringConstraints(pattern=USER_RE)]
Address = Annotated[str, StringConstraints(pattern=ADDRESS_RE)]
BusId = Annotated[str, StringConstraints(pattern=BUS_ID_RE)]
GpuUuid = Annotated[str, StringConstraints(pattern=GPU_UUID_RE)]
ProcessPattern = Annotated[str, StringConstraints(pattern=PATTERN_RE)]
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


SOURCE_KINDS: dict[str, tuple[str, str]] = {
    "systemd": (UNIT_RE, "a systemd unit name"),
    "journal": (UNIT_RE, "a systemd unit name"),
    "docker": (CONTAINER_RE, "a docker container name"),
    "process": (PATTERN_RE, "a pgrep -f pattern (not starting with '-' or a blank)"),
    "file": ("", "an absolute path"),
}


def check_source(value: str, kinds: tuple[str, ...], *, bare: tuple[str, ...] = ()) -> str:
    """`kind:value` with a known kind and a value of that kind's shape; `bare` lists values without ':'."""
    if value in bare:
        return value
    kind, sep, target = value.partition(":")
    valid = [f"{k}:<{SOURCE_KINDS[k][1]}>" for k in kinds] + list(bare)
    if not sep or kind not in kinds:
        raise ValueError(f"unknown source {value[:80]!r}; valid: {valid}")
    pattern, what = SOURCE_KINDS[kind]
    if kind == "file":
        _absolute(target)
    elif not re.fullmatch(pattern, target):
        raise ValueError(f"{kind}: needs {what}; got {target[:80]!r}")
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


BaseUrlText = BeforeValidator(check_base_url)
