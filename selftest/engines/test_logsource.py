"""Where the engine log is read from: each `logs` kind becomes one bounded, quoted command."""

from __future__ import annotations

import pytest

from llmval.engines import launch_log_path, log_command
from llmval.errors import InventoryError
from llmval.inventory import HostSpec
from llmval.transport import connect


def test_file_log_command_reads_evidence_lines(tmp_path):
    log = tmp_path / "engine log.txt"
    log.write_text("INFO boring line\nINFO non-default args: {'kv_cache_dtype': 'fp8'}\n")
    result = connect(HostSpec(name="me", platform="p")).run(log_command(f"file:{log}"))
    assert result.rc == 0 and result.stdout == "INFO non-default args: {'kv_cache_dtype': 'fp8'}\n"


def test_missing_file_says_so(tmp_path):
    result = connect(HostSpec(name="me", platform="p")).run(log_command(f"file:{tmp_path}/absent.log"))
    assert result.rc == 3 and "cannot read log file" in result.stderr


@pytest.mark.parametrize(("source", "part"), [("journal:sglang.service", "journalctl -u sglang.service -b"),
                                              ("docker:vllm-qwen35", "docker logs vllm-qwen35")])
def test_journal_and_docker_commands(source, part):
    assert part in log_command(source)


def test_launch_log_is_the_background_steps_log(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = launch_log_path("vllm-cpu", tmp_path / "reports")
    assert path == "reports/launch/start-vllm-cpu.log"
    assert path in log_command("launch", launch_path=path)


@pytest.mark.parametrize("source", ["syslog:x", "file:", "launch"])
def test_bad_log_sources_are_inventory_errors(source):
    with pytest.raises(InventoryError):
        log_command(source)
