"""Reading an endpoint's engine log on its host: which log (`logsource.log_command`), and what a failed read means.

    read = log_reader(endpoint, inventory=inventory, reports_dir=reports, run=lambda cmd: host.run(cmd))
    text = read() if read else None   # None: the inventory names no log for this endpoint

`run` is the host's command runner (a `llmval.transport` connection's `run`: a `CommandResult`). rc 0 is
the log; rc 1 with nothing on stderr is an empty selection (grep found no evidence line); anything else
is `CommandFailed` naming the host, the command and the result's `failure` (exit code and output tail).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import CommandFailed
from ..inventory import EndpointSpec, Inventory
from .logsource import launch_log_path, log_command


def launch_log_of(inventory: Inventory, reports_dir: Path) -> str | None:
    """The log of the inventory's first background launch step (what `--launch` links under `reports_dir`),
    or None when the inventory launches nothing in the background."""
    launch = inventory.launch
    steps = [s for s in (launch.start if launch else []) if s.background]
    return launch_log_path(steps[0].name or steps[0].run[:60], reports_dir) if steps else None


def log_reader(endpoint: EndpointSpec, *, inventory: Inventory, reports_dir: Path,
               run: Callable[[str], Any]) -> Callable[[], str] | None:
    """A function returning the evidence lines of the endpoint's log; None when the inventory names none."""
    if not endpoint.logs or not endpoint.host:
        return None
    launch_path = launch_log_of(inventory, reports_dir) if endpoint.logs == "launch" else None
    command = log_command(endpoint.logs, launch_path=launch_path)
    host = endpoint.host

    def read() -> str:
        result = run(command)
        if result.rc not in (0, 1) or (result.rc == 1 and result.stderr.strip()):
            raise CommandFailed(host, command, f"cannot read the log of {endpoint.name} "
                                f"({endpoint.logs}): {result.failure}")
        return result.stdout

    return read
