"""`python -m llmval bench --correctness-under-load` against the SYNTHESIZED stub: one row per concurrency in
OUT/summary.json and the last printed line, a broken gate named with its probe, a refused load a row saying why."""

from __future__ import annotations

import json

import pytest

from llmval.bench._cli import main

from .stub import stub_server, stub_state


def _run(state, tmp_path, *extra: str) -> dict:
    with stub_server(state) as base_url:
        assert main(["--correctness-under-load", "--base-url", base_url, "--model", "stub", "--concurrency", "2", "3",
                     "--input-len", "8", "--output-len", "20", "--niah-lengths", "256", "--niah-depths", "0.5",
                     "--hold-timeout-s", "3", "--no-repeat-idle", "--lock", str(tmp_path / "lock"),
                     "--out", str(tmp_path / "out"), *extra]) == 0
    return json.loads((tmp_path / "out" / "summary.json").read_text())


@pytest.mark.slow
def test_one_row_per_concurrency_with_each_gate_and_what_broke(tmp_path, capsys):
    summary = _run(stub_state(fault="values"), tmp_path)
    rows = summary["rows"]
    assert [r["concurrency"] for r in rows] == [2, 3]
    assert all(r["probes"] == 4 and r["held"] == 4 for r in rows)  # 1 NIAH cell + flat, enum, bigint
    assert rows[0]["outcomes"] == {"perf.correctness.niah": "held", "perf.correctness.toolcalls.validity": "held",
                                   "perf.correctness.toolcalls.values": "broken"}
    assert "toolcall strict/bigint-0" in rows[1]["broken"]["perf.correctness.toolcalls.values"]
    assert (tmp_path / "out" / "perf" / "bench-correctness-c3.json").is_file()
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["concurrency"] for r in last["correctness_under_load"]] == [2, 3]


@pytest.mark.slow
def test_a_refused_load_is_a_row_that_says_why(tmp_path):
    state = stub_state(refuse_load=True)
    summary = _run(state, tmp_path, "--tool-categories")
    assert all("NotReady" in r["error"] and "HTTP 503" in r["error"] for r in summary["rows"])
