"""A dead engine is one root cause in its own words (issues 31.2 and 30.4).

When the server does not answer, `serving.health` quotes the engine log's last error lines (the read
`log_command(..., errors=True)`: the current start's lines in which the engine says it failed), and the
`hosts.env.*` rules, which cannot be read from a serving process that is gone, are could-not-check folded under
`serving.health@<endpoint>` instead of a second BROKEN root cause.

REAL: REAL-local-cpu-api-server-killed (vLLM on CPU, API server killed with -9: the port closed, the process gone)
and REAL-h200-sglang-0.5.17-kill9 (`sglang.launch_server` killed with -9 on the H200; scheduler and detokenizer died
with it).
SYNTHESIZED (labelled where used): that recording with the error read of its log answering the lines vLLM writes
when its EngineCore is killed (`Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.` and the
`vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. ...` a traceback ends with, in the
`(APIServer pid=N) ERROR MM-DD HH:MM:SS [file.py:line]` record form of vLLM's own logs, as quoted in issue 31.2 and
in public vLLM bug reports), and a SIGKILLed SGLang (`sglang.launch_server`: no line is written).
"""

from __future__ import annotations

import json
import shutil
import sys

from llmval.engines.logs import last_error_statements
from llmval.hostfacts import log_command
from llmval.inventory import HostSpec
from llmval.io.transport import connect
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
DATA = ROOT / "selftest" / "data"
INVENTORY = DATA / "inventories" / "gpu-scripts-dry-run-cpu.toml"
REAL = DATA / "replays" / "REAL-local-cpu-api-server-killed"
LOG = "/tmp/zombie-gpu-sim/vllm.log"  # the recorded engine's log (the inventory's `logs`)
PREFIX = "(APIServer pid=9485) ERROR 12-01 10:40:12 [{}] "
ENGINE_DEAD = [  # SYNTHESIZED in vLLM's own record form (module docstring)
    PREFIX.format("core_client.py:604") + "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
    PREFIX.format("async_llm.py:480") + "AsyncLLM output_handler failed.",
    PREFIX.format("async_llm.py:480") + "Traceback (most recent call last):",
    PREFIX.format("async_llm.py:480") + '  File "/opt/vllm/v1/engine/async_llm.py", line 439, in output_handler',
    PREFIX.format("async_llm.py:480") + "    outputs = await engine_core.get_output_async()",
    PREFIX.format("async_llm.py:480") + "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    PREFIX.format("async_llm.py:480") + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                                        "See stack trace (above) for the root cause.",
]


def _replay(pytester, folder, inventory=INVENTORY) -> dict:
    pytester.chdir()
    pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                 str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests"), "-m", "smoke",
                 "-p", "no:xdist", "--inventory", str(inventory), "--replay", str(folder), timeout=300)
    return json.loads((pytester.path / "reports" / "results.json").read_text())


def _verdicts(results: dict) -> dict[str, dict]:
    return {v["check"]: v for t in results["tests"] for v in t.get("verdicts", [])}


def _roots(pytester) -> list[str]:
    status = (pytester.path / "reports" / "replay" / "status.md").read_text()
    failing = status.split("### Failing", 1)[1].split("\n### ", 1)[0]
    return [line for line in failing.splitlines() if line.startswith("- ")]


def _with_error_lines(pytester, lines: list[str]):
    """The REAL recording, plus the error read of its log answering `lines` (SYNTHESIZED)."""
    folder = pytester.path / "recording"
    shutil.copytree(REAL, folder)
    record = {"host": "h200", "command": str(log_command(f"file:{LOG}", errors=True)), "rc": 0,
              "stdout": "".join(line + "\n" for line in lines), "stderr": "", "duration_s": 0.01, "timed_out": False}
    with open(folder / "commands-13050.jsonl", "a") as out:
        out.write(json.dumps(record) + "\n")
    return folder


def test_the_real_killed_server_is_one_root_cause_with_the_env_rules_folded_under_it(pytester):
    """REAL: before, `hosts.env.*` were BROKEN "process:... not found" beside `serving.health` (two root causes,
    REAL-local-cpu-api-server-killed/results-live.json); now one root cause, the env rules could-not-check naming
    why, under it."""
    live = {t["nodeid"].split("::")[-1]: t for t in json.loads((REAL / "results-live.json").read_text())["tests"]}
    assert live["test_serving_env_as_required[h200-HF_HUB_OFFLINE]"]["outcome"] == "failed"  # the bug, as recorded
    results = _replay(pytester, REAL)
    [root] = _roots(pytester)
    assert "`serving.health` on h200-vllm" in root and "Connection refused" in root, root
    env = [t for t in results["tests"] if "test_serving_env_as_required" in t["nodeid"]]
    assert len(env) == 3 and all(t["outcome"] == "error" for t in env), env
    for test in env:
        verdict = test["verdicts"][-1]
        assert verdict["error"] == "ServingProcessGone" and verdict["target"] == "h200", verdict
        assert verdict["check"] == "hosts.env." + test["nodeid"].split("h200-")[1][:-1].lower(), verdict
        assert "not found: the serving process is not running" in verdict["observed"], verdict
        assert "serving.health@h200-vllm" in verdict["depends_on"], verdict
    health = _verdicts(results)["serving.health"]
    assert "not in this recording (made before the suite read them)" in health["evidence"], health


def test_the_real_sglang_launch_server_killed_with_9_is_one_root_cause(pytester):
    """REAL-h200-sglang-0.5.17-kill9 (issue 30.4): the live run gave 4 root causes (serving.health refused and the
    three hosts.env rules BROKEN "process:sglang.launch_server ... not found"); replayed, one: serving.health, the env
    rules could-not-check under it."""
    sglang = DATA / "replays" / "REAL-h200-sglang-0.5.17-kill9"
    assert "llmval: 4 root cause(s)" in (sglang / "pytest.out").read_text()  # as the live run said it
    results = _replay(pytester, sglang, sglang / "inventory.toml")
    [root] = _roots(pytester)
    assert "`serving.health` on h200-sglang" in root, root
    env = [t["verdicts"][-1] for t in results["tests"] if "test_serving_env_as_required" in t["nodeid"]]
    assert len(env) == 3 and all(v["error"] == "ServingProcessGone" for v in env), env
    assert all("process:sglang.launch_server" in v["observed"] for v in env), env


def test_a_dead_vllm_engine_core_is_quoted_in_its_own_words_as_the_root_cause(pytester):
    """SYNTHESIZED error lines (module docstring) on the REAL recording: serving.health's evidence quotes the last
    statements of failure (the traceback's frames left out), the EngineDeadError last."""
    results = _replay(pytester, _with_error_lines(pytester, ENGINE_DEAD))
    health = _verdicts(results)["serving.health"]
    # what died first, with its time (issue 43.5), then the statements written with it, the EngineDeadError last
    assert health["evidence"].startswith("what died, at 12-01 10:40:12: '" + ENGINE_DEAD[0]), health
    assert "; with it: '" + ENGINE_DEAD[1] + "' | '" + ENGINE_DEAD[-1] + "' (from file:/tmp/zombie-gpu-sim/vllm.log)" \
        in health["evidence"], health
    assert "File \\\"/opt" not in health["evidence"] and "^^^" not in health["evidence"]
    [root] = _roots(pytester)
    assert "serving.health" in root
    status = (pytester.path / "reports" / "replay" / "status.md").read_text()
    assert "EngineDeadError: EngineCore encountered an issue" in status.split("## Goal", 1)[0]  # What broke, whole


def test_a_sigkilled_server_that_wrote_nothing_says_so(pytester):
    """SGLang's `sglang.launch_server` killed with -9 (its scheduler and detokenizer die with it) writes no line;
    the evidence says the log holds no error line since its start, not that there is nothing to see."""
    results = _replay(pytester, _with_error_lines(pytester, []))
    health = _verdicts(results)["serving.health"]
    assert "holds no error line since its last start (a process killed with SIGKILL writes none)" in \
        health["evidence"], health
    assert len(_roots(pytester)) == 1


def test_the_error_read_runs_for_real_and_reads_the_current_start_only(tmp_path):
    """The declared command on this machine: an earlier start's error is not this start's; the current one's
    statements come back, frames dropped by the parser."""
    log = tmp_path / "vllm.log"
    log.write_text("(APIServer pid=1) INFO 12-01 09:00:00 [api_utils.py:273] non-default args: {'port': 1}\n"
                   + PREFIX.format("x.py:1") + "RuntimeError: an earlier start's failure\n"
                   + "(APIServer pid=9485) INFO 12-01 10:34:41 [api_utils.py:273] non-default args: {'port': 8357}\n"
                   + "(APIServer pid=9485) INFO 12-01 10:35:00 [loggers.py:1] Engine 000: Avg prompt throughput\n"
                   + "\n".join(ENGINE_DEAD) + "\n")
    result = connect(HostSpec(name="me", platform="p")).run(log_command(f"file:{log}", errors=True))
    assert result.rc == 0, result
    assert "earlier start" not in result.stdout and "Avg prompt throughput" not in result.stdout
    assert last_error_statements(result.stdout) == [ENGINE_DEAD[0], ENGINE_DEAD[1], ENGINE_DEAD[-1]]
