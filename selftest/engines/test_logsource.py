"""Where the engine log is read from: each `logs` kind becomes one bounded, quoted command that reads the current
engine start only and never lets periodic lines crowd its startup lines out (issue 13)."""

from __future__ import annotations

import os
import time

import httpx
import pytest

from llmval.core.errors import InventoryError
from llmval.engines import adapter_for, launch_log_path
from llmval.engines.logsource import MAX_LINES, MAX_PERIODIC_LINES
from llmval.hostfacts import log_command
from llmval.inventory import HostSpec, load_inventory
from llmval.io.transport import connect
from selftest.engines import fake_sglang
from selftest.strategies import ROOT

DATA = ROOT / "selftest" / "data" / "engines"
PERIODIC_COUNT = 200_000
# SYNTHESIZED periodic lines in the real shapes (../shared/reference/real-outputs/04_sglang, 05_vllm).
VLLM_PERIODIC = ("(APIServer pid=5596) INFO 11-30 06:{m:02d}:{s:02d} [loggers.py:271] Engine 000: "
                 "Avg prompt throughput: 102.4 tokens/s, Avg generation throughput: 54.9 tokens/s, "
                 "Running: 1 reqs, Waiting: 0 reqs, "
                 "GPU KV cache usage: 16.7%, Prefix cache hit rate: 0.0%")
VLLM_SPEC_PERIODIC = ("(APIServer pid=5596) INFO 11-30 06:{m:02d}:{s:02d} [metrics.py:101] SpecDecoding metrics: Mean "
                      "acceptance length: 2.87, Accepted throughput: 35.90 tokens/s, "
                      "Drafted throughput: 57.60 tokens/s, Accepted: 359 tokens, Drafted: 576 tokens, "
                      "Per-position acceptance rate: 0.792, 0.646, 0.432, "
                      "Avg Draft acceptance rate: 62.3%")
SGLANG_PERIODIC = ("[2026-11-30 10:{m:02d}:{s:02d} TP0] Decode batch. #running-req: 1, #token: 108, token usage: 0.00, "
                   "accept len: 2.17, accept rate: 0.54, cuda graph: True, gen throughput (token/s): 178.86, "
                   "#queue-req: 0, ")


def _periodic(count: int) -> str:
    shapes = (VLLM_PERIODIC, VLLM_SPEC_PERIODIC, SGLANG_PERIODIC)
    return "\n".join(shapes[i % 3].format(m=(i // 60) % 60, s=i % 60) for i in range(count)) + "\n"


def _read(command: str):
    return connect(HostSpec(name="me", platform="p")).run(command)


def test_file_log_command_reads_evidence_lines(tmp_path):
    log = tmp_path / "engine log.txt"
    log.write_text("INFO boring line\nINFO non-default args: {'kv_cache_dtype': 'fp8'}\n")
    result = connect(HostSpec(name="me", platform="p")).run(log_command(f"file:{log}"))
    assert result.rc == 0 and result.stdout == "INFO non-default args: {'kv_cache_dtype': 'fp8'}\n"


def test_missing_file_says_so(tmp_path):
    result = connect(HostSpec(name="me", platform="p")).run(log_command(f"file:{tmp_path}/absent.log"))
    assert result.rc == 3 and "cannot read log file" in result.stderr


@pytest.mark.parametrize(("source", "part"), [("journal:sglang.service", "_SYSTEMD_INVOCATION_ID="),
                                              ("journal:sglang.service", "journalctl -u sglang.service -b"),
                                              ("docker:vllm-qwen35", "docker logs ${since:+--since \"$since\"} "
                                                                     "vllm-qwen35")])
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


def _vllm_metrics(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/metrics":
        return httpx.Response(200, text=(DATA / "REAL-vllm-0.32.0-cpu-metrics.txt").read_text())
    return httpx.Response(404)


@pytest.mark.slow
def test_startup_facts_survive_200k_periodic_lines(tmp_path):
    """REAL vLLM 0.32.0 startup log + 200,000 periodic lines of both engines: local.toml's engine-flag and KV checks
    still hold (before issue 13 the last 3000 matching lines were all periodic ones)."""
    log = tmp_path / "engine.log"
    log.write_text((DATA / "REAL-vllm-0.32.0-cpu-bf16.log").read_text() + _periodic(PERIODIC_COUNT))
    started = time.monotonic()
    result = _read(log_command(f"file:{log}"))
    took = time.monotonic() - started
    assert result.rc == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) < MAX_PERIODIC_LINES + 100 and took < 15, (len(lines), took)
    spec = load_inventory(ROOT / "inventories" / "local.toml").endpoints[0]
    expect = spec.expect
    client = httpx.Client(base_url="http://engine.test:1", transport=httpx.MockTransport(_vllm_metrics))
    vllm = adapter_for(spec, client, read_log=lambda: result.stdout)
    kv = vllm.kv_cache_evidence()
    assert len(kv) >= 2 and {e.resolved for e in kv} == {expect.kv_cache_dtype} and not vllm.kv_fp8_quotes()
    assert vllm.model_dtype().value == expect.dtype and vllm.tool_call_parser().value == expect.tool_call_parser
    assert vllm.tensor_parallel_size().value == expect.tensor_parallel_size and vllm.nodes().value == expect.nodes
    assert vllm.executor_backend().value == "uni" and vllm.speculative()["algorithm"].value is None


@pytest.mark.slow
def test_sglang_startup_facts_survive_200k_decode_lines(tmp_path):
    log = tmp_path / "sglang.log"
    log.write_text(fake_sglang.startup_log("healthy") + _periodic(PERIODIC_COUNT))
    result = _read(log_command(f"file:{log}"))
    client = httpx.Client(base_url="http://engine.test:1", transport=httpx.MockTransport(fake_sglang.handler()))
    spec = next(e for e in load_inventory(ROOT / "inventories" / "kpro6.toml").endpoints if e.engine == "sglang")
    sglang = adapter_for(spec, client, read_log=lambda: result.stdout)
    kv = sglang.kv_cache_evidence()
    assert len(kv) == 2 and {e.resolved for e in kv} == {"bfloat16"}
    assert 0 < len(sglang.log.accept_lengths) <= MAX_PERIODIC_LINES  # the latest periodic lines are still read


def test_file_is_read_from_its_last_start(tmp_path):
    old = "INFO non-default args: {'kv_cache_dtype': 'fp8'}\nWARNING Using fp8 data type to store kv cache.\n"
    log = tmp_path / "engine.log"
    log.write_text(old + _periodic(10) + (DATA / "REAL-vllm-0.32.0-cpu-bf16.log").read_text())
    out = _read(log_command(f"file:{log}")).stdout
    assert "fp8" not in out and "'tool_call_parser': 'hermes'" in out


def test_many_startup_lines_keep_the_last_window(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("INFO non-default args: {'a': 1}\n" + "".join(f"INFO KV cache line {i}\n" for i in range(5000)))
    out = _read(log_command(f"file:{log}")).stdout.splitlines()
    assert len(out) == MAX_LINES and out[-1] == "INFO KV cache line 4999"


def _stub(folder, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_journal_reads_the_units_current_invocation_only(tmp_path, monkeypatch):
    """Stub systemctl/journalctl on PATH: the previous invocation's fp8 start must not be read."""
    (tmp_path / "current").write_text("INFO non-default args: {'kv_cache_dtype': 'auto'}\n")
    (tmp_path / "earlier").write_text("INFO non-default args: {'kv_cache_dtype': 'fp8'}\n")
    _stub(tmp_path, "systemctl", "echo 7c1f00d\n")
    _stub(tmp_path, "journalctl", f'if [ "$1" = _SYSTEMD_INVOCATION_ID=7c1f00d ]; then cat {tmp_path}/current; '
                                  f"else cat {tmp_path}/earlier {tmp_path}/current; fi\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    out = _read(log_command("journal:vllm.service"))
    assert out.stdout == (tmp_path / "current").read_text()


def test_docker_reads_since_the_containers_last_start(tmp_path, monkeypatch):
    (tmp_path / "current").write_text("INFO non-default args: {'port': 2}\n")
    (tmp_path / "earlier").write_text("INFO non-default args: {'port': 1}\n")
    _stub(tmp_path, "docker", 'if [ "$1" = inspect ]; then echo 2026-11-30T02:10:00.5Z; '
                              'elif [ "$2" = --since ] && [ "$3" = 2026-11-30T02:10:00.5Z ]; then '
                              f"cat {tmp_path}/current; else cat {tmp_path}/earlier {tmp_path}/current; fi\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    out = _read(log_command("docker:vllm"))
    assert out.stdout == (tmp_path / "current").read_text()
