"""Environment blocks from /proc/PID/environ (NUL- or newline-separated), systemd and docker.

    >>> parse_environ("A=1\\0B=x=y\\0")
    {'A': '1', 'B': 'x=y'}
"""

from __future__ import annotations

from collections.abc import Iterable


def parse_env_assignments(items: Iterable[str]) -> dict[str, str]:
    """`NAME=value` strings → dict (docker Config.Env, systemd Environment= words); later wins."""
    env = {}
    for item in items:
        name, sep, value = item.partition("=")
        if sep and name:
            env[name] = value
    return env


def parse_environ(text: str) -> dict[str, str]:
    """/proc/PID/environ as read (NUL-separated) or after `tr '\\0' '\\n'`."""
    separator = "\0" if "\0" in text else "\n"
    return parse_env_assignments(part for part in text.split(separator) if part)
