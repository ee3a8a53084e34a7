"""The engine-log reads of `llmval.engines.logsource`, on the read-only allow-list like every host fact.

logsource owns what the read does (`log_command_text`: the current engine start, startup and periodic lines);
the templates here are that text built once with a placeholder for the one inventory value, so the literal
part (programs, options, the awk filter) is fixed at import and the value is a typed argument: a path, a
unit or a container name, never an option. `logsource.log_command` sends `render_log_command(...)`, which
checks the value and renders exactly what `log_command_text` would have built.
"""

from __future__ import annotations

import shlex

from ..engines.logsource import log_command_text
from ._command import CONTAINER, PATH, TEXT, UNIT, Command, UnsafeArgument
from ._fact import allow

_HOLE = "LLMVALARGUMENT"
"""A placeholder value that `shlex.quote` leaves as it is and that no template holds otherwise."""


def _template(text: str, *fields: str) -> str:
    """`text` with braces escaped and each occurrence of the placeholder replaced by the next field."""
    text = text.replace("{", "{{").replace("}", "}}")
    for field in fields:
        if _HOLE not in text:
            raise ValueError(f"log_command_text did not use its argument where {field} was expected")
        text = text.replace(_HOLE, field, 1)
    return text


def _all(text: str, field: str) -> str:
    return _template(text, *[field] * text.count(_HOLE))


LOG_FILE = Command("engine-log-file", _all(log_command_text(f"file:{_HOLE}"), "{path}"), path=PATH)
LOG_JOURNAL = Command("engine-log-journal", _all(log_command_text(f"journal:{_HOLE}"), "{unit}"), unit=UNIT)
LOG_DOCKER = Command("engine-log-docker", _all(log_command_text(f"docker:{_HOLE}"), "{name}"), name=CONTAINER)
LOG_LAUNCH = Command("engine-log-launch", _template(log_command_text("launch", launch_path=_HOLE), "{paths*}",
                                                    "{message}"),
                     paths=PATH, message=TEXT, derive={"message": lambda args: " or ".join(args["paths"])})
allow(LOG_FILE, LOG_JOURNAL, LOG_DOCKER, LOG_LAUNCH)


def render_log_command(source: str, *, launch_path: str | list[str] | None = None) -> str:
    """The engine-log command for `source`, each value checked against its kind (UnsafeArgument if not)."""
    text = log_command_text(source, launch_path=launch_path)  # its own errors (unknown kind, no path) first
    kind, _, where = source.partition(":")
    if kind == "launch":
        candidates = [launch_path] if isinstance(launch_path, str) else list(dict.fromkeys(launch_path or []))
        rendered = LOG_LAUNCH.render(paths=candidates)
    else:
        family, key = {"file": (LOG_FILE, "path"), "journal": (LOG_JOURNAL, "unit"),
                       "docker": (LOG_DOCKER, "name")}[kind]
        rendered = family.render(**{key: where})
    if rendered != text:  # the declared template no longer matches logsource's builder: refuse, do not guess
        raise UnsafeArgument(kind, "source", source, f"renders differently from log_command_text: "
                             f"{shlex.quote(rendered[:80])} vs {shlex.quote(text[:80])}")
    return rendered
