"""The command vocabulary as a host fact's module imports it (`from ._command import Command, PATH`).

It is `llmval.io.command`: one definition for host facts, engine-log reads, the readiness watch and the transport.
"""

from __future__ import annotations

from ..inventory.values import MAX_VALUE_CHARS
from ..io.command import (
    ARG_RE,
    CONTAINER,
    GLOB,
    GLOB_ARG_RE,
    NUMBER,
    PATH,
    PATTERN,
    SAFE_WORD_RE,
    TEXT,
    UNIT,
    Command,
    Kind,
    Rendered,
    UnsafeArgument,
)

__all__ = ["ARG_RE", "CONTAINER", "GLOB", "GLOB_ARG_RE", "MAX_VALUE_CHARS", "NUMBER", "PATH", "PATTERN",
           "SAFE_WORD_RE", "TEXT", "UNIT", "Command", "Kind", "Rendered", "UnsafeArgument"]
