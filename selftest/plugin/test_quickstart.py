"""The README's quick start in its order (issue 34.0): `make smoke`, then `make selftest`.

`make smoke` runs `pytest -m smoke --launch`, which leaves the engine's log in `reports/launch/<run>/` and the
link `reports/launch/start-vllm-cpu.log` to it. The self-tests that replay the committed REAL local recording
must then judge what the recording holds, whatever the replaying checkout's reports folder has: here a folder
is planted as `make smoke` leaves it (cheap; no engine is started) before the same replays run in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmval.cli.snapshot import diff, placeholder_paths, take
from selftest.contract import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
LOCAL = ROOT / "inventories" / "local.toml"
LOCAL_SMOKE = ROOT / "selftest" / "data" / "replays" / "local-smoke-real"


def plant_smoke_leftovers(folder: Path) -> Path:
    """`folder/reports/launch/` as `make smoke` leaves it: a run's folder with the engine's log, and the link the
    launch fixture keeps to the latest one (fixtures/launch.py `_link_latest_logs`)."""
    launch = folder / "reports" / "launch"
    run = launch / "20261201-233000-4242"
    run.mkdir(parents=True)
    (run / "start-vllm-cpu.log").write_text("INFO non-default args: {'model': 'elsewhere'}\n")
    (launch / "start-vllm-cpu.log").symlink_to(run.relative_to(launch) / "start-vllm-cpu.log")
    return launch


def test_snapshot_replay_after_make_smoke_reads_the_recorded_engine_log(tmp_path, monkeypatch):
    plant_smoke_leftovers(tmp_path)
    monkeypatch.chdir(tmp_path)  # `llmval snapshot` looks for the launch log under ./reports
    _, snap = take(LOCAL, [LOCAL_SMOKE])
    confirmed = {c.path: c.observed for c in diff(snap, placeholder_paths(LOCAL.read_text())) if c.kind == "confirmed"}
    assert confirmed.get("endpoints[local-vllm].expect.tool_call_parser") == "hermes", snap.unread
    assert confirmed.get("endpoints[local-vllm].expect.kv_cache_dtype") == "bfloat16", snap.unread


@pytest.mark.skipif(not (LOCAL_SMOKE / "results-live.json").exists(), reason="no committed local smoke recording")
def test_contract_replay_after_make_smoke_has_the_live_verdicts(pytester):
    plant_smoke_leftovers(pytester.path)  # run_contract's --reports is pytester.path/reports
    result = run_contract(pytester, "-m", "smoke and serving", "-p", "no:xdist", "--inventory", str(LOCAL),
                          "--replay", str(LOCAL_SMOKE))
    live = {t["nodeid"]: t["outcome"] for t in json.loads((LOCAL_SMOKE / "results-live.json").read_text())["tests"]}
    replayed = {t["nodeid"]: t["outcome"]
                for t in json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]}
    serving = {nodeid: outcome for nodeid, outcome in live.items() if nodeid in replayed}
    assert serving and {nodeid: replayed[nodeid] for nodeid in serving} == serving, result.stdout.str()[-3000:]
