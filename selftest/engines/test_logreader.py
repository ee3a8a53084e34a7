"""Reading an endpoint's engine log: no declared log is None, an empty selection is "", a failed read names
the host and the command, and `logs = "launch"` reads the inventory's background launch step's log."""

from __future__ import annotations

import pytest

from llmval.core.errors import CommandFailed
from llmval.engines import launch_log_of
from llmval.hostfacts import log_reader
from llmval.inventory import load_inventory
from llmval.io.recording import CommandResult
from selftest.strategies import ROOT

INVENTORY = load_inventory(ROOT / "inventories" / "local.toml")
FILE_LOG = INVENTORY.endpoints[0].model_copy(update={"logs": "file:/var/log/engine.log", "host": "local"})


def _host(rc: int, stdout: str = "", stderr: str = ""):
    """A host runner answering every command with one result; `.sent` lists the commands."""
    def run(command: str) -> CommandResult:
        run.sent.append(command)
        return CommandResult("local", command, rc, stdout, stderr)
    run.sent = []
    return run


def test_an_endpoint_without_logs_has_no_reader(tmp_path):
    endpoint = FILE_LOG.model_copy(update={"logs": None})
    assert log_reader(endpoint, inventory=INVENTORY, reports_dir=tmp_path, run=_host(0)) is None


@pytest.mark.parametrize(("rc", "stdout", "expected"), [
    (0, "non-default args: {...}\n", "non-default args: {...}\n"),
    (1, "", ""),  # grep selected nothing: an empty log, not a failure
])
def test_a_read_returns_the_selected_lines(tmp_path, rc, stdout, expected):
    host = _host(rc, stdout)
    read = log_reader(FILE_LOG, inventory=INVENTORY, reports_dir=tmp_path, run=host)
    assert read() == expected and "/var/log/engine.log" in host.sent[0]


def test_a_failed_read_names_host_command_and_output(tmp_path):
    read = log_reader(FILE_LOG, inventory=INVENTORY, reports_dir=tmp_path, run=_host(3, stderr="cannot read"))
    with pytest.raises(CommandFailed, match=r"cannot read the log of .*exit code 3: cannot read"):
        read()


def test_launch_logs_are_read_from_the_background_step(tmp_path):
    path = launch_log_of(INVENTORY, tmp_path)
    assert path is not None and path.endswith(".log")
    host = _host(0)
    log_reader(FILE_LOG.model_copy(update={"logs": "launch"}), inventory=INVENTORY, reports_dir=tmp_path, run=host)()
    assert path in host.sent[0]
