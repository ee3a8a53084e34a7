"""The engine-log reads: one declared command per kind of log source, on the read-only allow-list.

The inventory's `logs` field says where an endpoint's engine log is: `file:<path>`, `journal:<unit>`,
`docker:<container>`, or `launch` (the log the suite's own `--launch` background step writes under
`<reports>/launch/`, which is also where the integrator's shared local engine logs). `log_command(source)`
picks the family and renders it with the one inventory value as a typed argument (a path, a unit or a
container name, never an option); `log_reader` runs it through the host's connection.

Each read covers the CURRENT engine start only, however long it has served: the journal of the unit's current
invocation (`_SYSTEMD_INVOCATION_ID`), `docker logs --since` the container's last start, a file from its last
start marker on. Of that, it keeps the startup lines (`STARTUP_LINES`, at most `MAX_LINES`) and, separately,
only the last `MAX_PERIODIC_LINES` periodic lines (`PERIODIC_LINES`), so days of serving never push the
startup facts out of the window. One pass of `awk`, so the read stays bounded and a recording stays small.
The line shapes are engine knowledge (`llmval.engines.logsource`, beside the parsers that read them); the
command text around them is fixed here, once, at import.

    >>> log_command("file:/var/log/vllm.log").family is LOG_FILE
    True
    >>> log_command("journal:-x")   # raises UnsafeArgument: unit='-x' starts with '-' (it would be read as an option)
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import CommandFailed, InventoryError
from ..engines.logsource import (
    ERROR_LINES,
    LOG_KINDS,
    MAX_ERROR_LINES,
    MAX_LINES,
    MAX_PERIODIC_LINES,
    MAX_STALL_LINES,
    PERIODIC_LINES,
    STALL_LINES,
    START_MARKERS,
    STARTUP_LINES,
    launch_log_of,
)
from ..inventory import EndpointSpec, Inventory
from ._command import CONTAINER, PATH, TEXT, UNIT, Command, Rendered
from ._fact import allow


def _literal(text: str) -> str:
    """`text` as literal template text (braces doubled, so that no part of it is a field)."""
    return text.replace("{", "{{").replace("}", "}}")


_SELECT = _literal("awk " + shlex.quote(
    "/" + PERIODIC_LINES + "/ { p[np++ % " + str(MAX_PERIODIC_LINES) + "] = $0; next } "
    "/" + STARTUP_LINES + "/ { s[ns++ % " + str(MAX_LINES) + "] = $0 } "
    "END { for (i = (ns > " + str(MAX_LINES) + " ? ns - " + str(MAX_LINES) + " : 0); i < ns; i++) print s[i % "
    + str(MAX_LINES) + "]; for (i = (np > " + str(MAX_PERIODIC_LINES) + " ? np - " + str(MAX_PERIODIC_LINES)
    + " : 0); i < np; i++) print p[i % " + str(MAX_PERIODIC_LINES) + "] }"))
"""The awk filter: startup lines (last MAX_LINES) then periodic ones (last MAX_PERIODIC_LINES), in order."""


ERRORS_SELECT = "awk " + shlex.quote(
    "/" + STALL_LINES + "/ { w[nw++ % " + str(MAX_STALL_LINES) + "] = $0; next } "
    "/" + ERROR_LINES + "/ { e[ne++ % " + str(MAX_ERROR_LINES) + "] = $0 } "
    "END { for (i = (nw > " + str(MAX_STALL_LINES) + " ? nw - " + str(MAX_STALL_LINES) + " : 0); i < nw; i++) "
    "print w[i % " + str(MAX_STALL_LINES) + "]; for (i = (ne > " + str(MAX_ERROR_LINES) + " ? ne - "
    + str(MAX_ERROR_LINES) + " : 0); i < ne; i++) print e[i % " + str(MAX_ERROR_LINES) + "] }")
_ERRORS = _literal(ERRORS_SELECT)
"""The error filter: the last MAX_STALL_LINES lines in which vLLM under Ray waits for its placement group
(`STALL_LINES`), then the last MAX_ERROR_LINES lines in which the engine says it failed (`ERROR_LINES`):
one window, each kind with its own budget, so a traceback never pushes the wait out nor the wait the error."""


def _from_last_start(file: str, select: str = _SELECT) -> str:
    """Template text: `select` over `file` (a field, or "$f") from its last start marker on."""
    return ("n=$(grep -a -n -E " + _literal(shlex.quote(START_MARKERS)) + " " + file + " | tail -n 1 | cut -d: -f1); "
            'tail -n +"${{n:-1}}" ' + file + " | " + select)


def _log_commands(select: str, suffix: str = "") -> tuple[Command, Command, Command, Command]:
    """The four log reads (file, journal, docker, launch), each piping the current start through `select`."""
    return (
        Command(
            "engine-log-file" + suffix,
            "if [ -r {path} ]; then " + _from_last_start("{path}", select) + "; "
            "else echo 'llmval: cannot read log file '{path} >&2; exit 3; fi",
            path=PATH),
        Command(
            "engine-log-journal" + suffix,
            # the unit's current invocation only; systemd without InvocationID (< 232): this boot
            "inv=$(systemctl show -p InvocationID --value {unit} 2>/dev/null); "
            'if [ -n "$inv" ]; then journalctl _SYSTEMD_INVOCATION_ID="$inv" --no-pager -o cat; '
            "else journalctl -u {unit} -b --no-pager -o cat; fi 2>&1 | " + select,
            unit=UNIT),
        Command(
            "engine-log-docker" + suffix,
            # since the container's current start (a restarted container keeps its earlier runs' output)
            "since=$(docker inspect -f '{{{{.State.StartedAt}}}}' {name} 2>/dev/null); "
            'docker logs ${{since:+--since "$since"}} {name} 2>&1 | ' + select,
            name=CONTAINER),
        Command(
            "engine-log-launch" + suffix,
            # candidates: this run's reports, then the default reports/; the first readable wins
            'for f in {paths*}; do if [ -r "$f" ]; then ' + _from_last_start('"$f"', select) + "; exit 0; fi; done; "
            "echo 'llmval: cannot read the launch log: '{message} >&2; exit 3",
            # suite_args: where the suite's reports are; a replay answers "the launch log" of the host
            paths=PATH, message=TEXT, derive={"message": lambda args: " or ".join(args["paths"])},
            suite_args=("paths", "message")),
    )


LOG_FILE, LOG_JOURNAL, LOG_DOCKER, LOG_LAUNCH = _log_commands(_SELECT)
ERRORS_FILE, ERRORS_JOURNAL, ERRORS_DOCKER, ERRORS_LAUNCH = _log_commands(_ERRORS, "-errors")
"""The last error lines of the engine's current start (issue 31.2): read only when its server does not answer, to
quote the engine's own last words as the evidence of `serving.health`."""
allow(LOG_FILE, LOG_JOURNAL, LOG_DOCKER, LOG_LAUNCH, ERRORS_FILE, ERRORS_JOURNAL, ERRORS_DOCKER, ERRORS_LAUNCH)


def log_command(source: str, *, launch_path: str | list[str] | None = None, errors: bool = False) -> Rendered:
    """The declared read of the log at `source` (an inventory `logs` value), its value checked against its kind
    (`UnsafeArgument` before anything is sent). `launch_path` may list candidates for `launch`. `errors`: the
    read of its last error lines and Ray placement-group lines instead of its evidence lines."""
    file, journal, docker, launch = (ERRORS_FILE, ERRORS_JOURNAL, ERRORS_DOCKER, ERRORS_LAUNCH) if errors else \
        (LOG_FILE, LOG_JOURNAL, LOG_DOCKER, LOG_LAUNCH)
    kind, _, where = source.partition(":")
    if kind == "launch":
        if not launch_path:
            raise InventoryError("<inventory>", [("endpoints.logs", "`launch` needs a [launch] background step")])
        candidates = [launch_path] if isinstance(launch_path, str) else list(dict.fromkeys(launch_path))
        return launch.render(paths=candidates)
    family = {"file": (file, "path"), "journal": (journal, "unit"), "docker": (docker, "name")}.get(kind)
    if family is None:
        raise InventoryError("<inventory>", [("endpoints.logs", f"unknown log source {source!r}; valid: {LOG_KINDS}")])
    if not where:
        raise InventoryError("<inventory>", [("endpoints.logs", f"{source!r}: say where, e.g. file:/path")])
    command, key = family
    return command.render(**{key: where})


def log_reader(endpoint: EndpointSpec, *, inventory: Inventory, reports_dir: Path,
               run: Callable[[Rendered], Any], errors: bool = False) -> Callable[[], str] | None:
    """A function returning the evidence lines of the endpoint's log (`errors`: its last error lines and Ray
    placement-group lines); None when the inventory names none.

    `run` is the host's `Connection.run`. rc 0 is the log; rc 1 with nothing on stderr is an empty selection
    (grep found no evidence line); anything else is `CommandFailed` naming the host, the command and the
    result's `failure` (exit code and output tail)."""
    if not endpoint.logs or not endpoint.host:
        return None
    launch_path = launch_log_of(inventory, reports_dir) if endpoint.logs == "launch" else None
    command = log_command(endpoint.logs, launch_path=launch_path, errors=errors)
    host = endpoint.host

    def read() -> str:
        result = run(command)
        if result.rc not in (0, 1) or (result.rc == 1 and result.stderr.strip()):
            raise CommandFailed(host, command, f"cannot read the log of {endpoint.name} "
                                f"({endpoint.logs}): {result.failure}")
        return result.stdout

    return read
