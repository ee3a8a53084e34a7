"""Issues 43.5 and 44.3: an engine's death in its own words, from after its last start, close to the death, with its
time; startup lines are never evidence.

REAL lines: SGLang 0.5.17 on the lent H200 (`REAL-h200-sglang-0.5.17-launch`'s engine output, where the suite's
teardown stopped it: `Subprocess scheduler_0 (pid=3519) crashed with exit code -15. Triggering SIGQUIT for
cleanup...`, `SIGQUIT received ...`; its `server_args=ServerArgs(...)` startup line, which holds
`custom_sigquit_handler=None`), the `/tokenize` traceback of `REAL-h200-sglang-0.5.17-contract`'s log (`TypeError:
Integer exceeds 64-bit range`), and vLLM 0.24's error read of `REAL-h200-vllm-ray-worker-kill` (a startup `WARNING
... Found ulimit ... failed` three minutes before the death). Where two REAL logs are joined into one (the stale
traceback, then a death), the test says so: the join is SYNTHESIZED, every line in it recorded.
"""

from __future__ import annotations

import json
import re

import pytest

from llmval.engines import SglangAdapter, VllmAdapter
from llmval.engines.logs import death_evidence, last_error_statements
from llmval.engines.logsource import ERROR_LINES
from llmval.hostfacts import log_command
from llmval.inventory import HostSpec
from llmval.io.transport import connect
from selftest.engines.rekey_log_commands import OLD_ERROR_LINES
from selftest.strategies import ROOT

REPLAYS = ROOT / "selftest" / "data" / "replays"
SGLANG_LAUNCH_LOG = (REPLAYS / "REAL-h200-sglang-0.5.17-launch" / "reports" / "launch"
                     / "20261202T002836Z-h200-sglang-launch" / "start-sglang.log")
SGLANG_CONTRACT_LOG = REPLAYS / "REAL-h200-sglang-0.5.17-contract" / "sglang.log"


def _grep(pattern: str, text: str) -> str:
    """What `grep -E pattern` keeps of `text` (the patterns are plain extended regexes Python reads alike)."""
    return "".join(line + "\n" for line in text.splitlines() if re.search(pattern, line))


def test_sglangs_startup_line_was_taken_for_an_error_and_no_longer_is():
    log = SGLANG_LAUNCH_LOG.read_text()
    startup = next(line for line in log.splitlines() if "server_args=ServerArgs(" in line)
    assert "custom_sigquit_handler=None" in startup
    assert re.search(OLD_ERROR_LINES, startup)  # the bug (44.3): the old read kept it as an error line
    assert not re.search(ERROR_LINES, startup)
    # a death that wrote no line: the startup line alone is never quoted, whatever the read kept
    assert death_evidence(startup, SglangAdapter.death_lines).last == ""
    assert last_error_statements(startup) == []


def test_sglangs_own_death_lines_are_read_and_quoted_with_their_time():
    log = SGLANG_LAUNCH_LOG.read_text()
    kept = _grep(ERROR_LINES, log)
    assert not re.search(r"crashed with exit code|SIGQUIT received", _grep(OLD_ERROR_LINES, log))  # never read
    found = death_evidence(kept, SglangAdapter.death_lines)
    assert found.death == ("[2026-12-02 00:29:37] Subprocess scheduler_0 (pid=3519) crashed with exit code -15. "
                           "Triggering SIGQUIT for cleanup...")
    assert found.at == "2026-12-02 00:29:37"
    assert any("SIGQUIT received" in line for line in found.near)
    assert all("server_args" not in line for line in (found.last, *found.near))


def test_a_traceback_minutes_older_than_the_death_is_not_its_last_words():
    """SYNTHESIZED join of two REAL SGLang 0.5.17 logs of the lent H200: the contract run's log (its /tokenize
    TypeError at 00:08-00:10), then the launch run's death lines (00:29:37). Before: "last error: 'TypeError:
    Integer exceeds 64-bit range'" (issue 43.5)."""
    contract = SGLANG_CONTRACT_LOG.read_text()
    death = [line for line in SGLANG_LAUNCH_LOG.read_text().splitlines()
             if re.search("crashed with exit code|SIGQUIT received", line)]
    kept = _grep(ERROR_LINES, contract + "\n".join(death) + "\n")
    assert "TypeError: Integer exceeds 64-bit range" in kept
    found = death_evidence(kept, SglangAdapter.death_lines)
    assert "crashed with exit code -15" in found.death and found.at == "2026-12-02 00:29:37"
    assert not any("Integer exceeds" in line for line in (found.last, *found.near)), found


def test_vllms_death_is_its_first_line_and_a_startup_warning_is_not_before_it():
    records = [json.loads(line) for path in (REPLAYS / "REAL-h200-vllm-ray-worker-kill").glob("commands-*.jsonl")
               for line in path.read_text().splitlines()]
    read = next(r["stdout"] for r in records if "engine core exited unexpectedly" in r["command"])
    assert "Found ulimit of 20000 and failed" in read  # what the error read keeps (its `OSError:`), 05:13:26
    found = death_evidence(read, VllmAdapter.death_lines)
    assert "RayWorkerProc rank=[0] died unexpectedly" in found.death and found.at == "12-02 05:16:48"
    assert any("EngineDeadError" in line for line in found.near)
    assert not any("ulimit" in line for line in (found.death, *found.near))


@pytest.mark.parametrize(("adapter", "line"), [
    (VllmAdapter, "(APIServer pid=4) WARNING 12-03 08:32:59 [core_client.py:1] [shutdown] MPClient: engine core "
                  "exited unexpectedly; starting cleanup"),
    (VllmAdapter, "(APIServer pid=4) ERROR 12-03 08:32:59 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: "
                  "EngineCore encountered an issue."),
    (SglangAdapter, "[2026-12-03 08:32:59] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"),
    (SglangAdapter, "[2026-12-03 08:32:59] Received sigquit from a child process. It usually means the child failed."),
    (SglangAdapter, "[2026-12-03 08:32:59 TP0] RuntimeError: CUDA error: out of memory"),
    (VllmAdapter, "(EngineCore pid=4) ERROR 12-03 08:32:59 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. "
                  "Tried to allocate 2.00 GiB."),
])
def test_each_adapters_death_lines_are_read_and_named(adapter, line):
    """The shapes each engine's source writes (vLLM core_client's `[shutdown] MPClient: ...` WARNING, SGLang's
    watchdog and launch-phase handler, torch's OOM), one line each: the host read keeps it, the adapter names it."""
    stale = ("(APIServer pid=4) ERROR 12-03 08:20:00 [x.py:1] ValueError: an old request's failure"
             if adapter is VllmAdapter else "[2026-12-03 08:20:00] ValueError: an old request's failure")
    kept = _grep(ERROR_LINES, f"{stale}\n{line}\n")
    assert line in kept
    found = death_evidence(kept, adapter.death_lines)
    assert found.death == line and found.at.endswith("08:32:59") and found.near == ()


def test_the_error_read_runs_for_real_from_the_last_start_without_its_startup_line(tmp_path):
    """The declared command on this machine over the REAL SGLang log: its startup line is the window's first line,
    and neither it nor anything before the start comes back as an error."""
    log = tmp_path / "sglang.log"
    log.write_text("[2026-12-02 00:10:00] RuntimeError: an earlier start's failure\n" + SGLANG_LAUNCH_LOG.read_text())
    result = connect(HostSpec(name="me", platform="p")).run(log_command(f"file:{log}", errors=True))
    assert result.rc == 0, result
    assert "earlier start" not in result.stdout and "server_args=" not in result.stdout
    assert "crashed with exit code -15" in result.stdout and "SIGQUIT received" in result.stdout
