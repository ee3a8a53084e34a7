"""The multi-turn agentic load: sessions grow turn by turn on a shared prefix; the engine's hit rate is read back.

Against a SYNTHESIZED chat server whose prefix cache is known (`fake_prefix_server`): the hit rate the load reads
from /metrics equals the server's own count, TTFT is reported by context length and turn, goodput under SLOs.
"""

from __future__ import annotations

import asyncio
import itertools
import json

import httpx

from llmval.engines import VllmAdapter
from llmval.load import WireClient
from llmval.load._agentic import AgenticProfile, build_sessions, chat_payload, context_bucket, run_agentic
from llmval.load._rate import Slo

from .fake_prefix_server import prefix_server, tokens_of

PROFILE = AgenticProfile(model="m", sessions=4, turns=5, concurrency=2, output_len=3)


def _run(base_url: str, profile: AgenticProfile = PROFILE, nonce: str = "n1"):
    async def go():
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client, \
                WireClient(base_url, timeout_s=30) as streamer:
            return await run_agentic(client, streamer, profile, endpoint="fake", engine=VllmAdapter, nonce=nonce,
                                     sample_interval_s=0.05)
    return asyncio.run(go())


def test_each_turn_extends_the_previous_turn_and_sessions_share_the_system_prompt():
    sessions = build_sessions(PROFILE, "n1")
    for s in sessions:
        turns = [s.messages(k) for k in range(1, PROFILE.turns + 1)]
        assert all(later[:len(earlier)] == earlier and len(later) == len(earlier) + 2
                   for earlier, later in itertools.pairwise(turns))
        assert turns[-1][-1]["role"] == "tool" and turns[0][-1]["role"] == "user"
    assert len({s.system for s in sessions}) == 1 and sessions[0].system.startswith("Agent run n1.")
    assert len({s.task for s in sessions}) > 1  # each session its own task and steps
    assert build_sessions(PROFILE, "n2")[0].system != sessions[0].system  # a new run never hits an old one
    assert build_sessions(PROFILE, "n1")[1].messages(3) == sessions[1].messages(3)  # seeded: the same bytes


def test_the_payload_streams_with_usage_tools_and_a_pinned_temperature():
    body = json.loads(chat_payload(PROFILE, build_sessions(PROFILE, "n")[0].messages(2), ignore_eos=True))
    assert body["stream"] and body["stream_options"] == {"include_usage": True} and body["temperature"] == 0.0
    assert [t["function"]["name"] for t in body["tools"]] == ["list_files", "read_file", "run_command"]
    assert body["tool_choice"] == "auto" and body["ignore_eos"] and body["max_tokens"] == 3


def test_hit_rate_read_from_metrics_equals_the_servers_own_count():
    with prefix_server(block=4) as (base_url, cache):
        run = _run(base_url)
        warm_queried = len(tokens_of(cache.requests[0]["messages"]))  # the warmup turn, before the window
        truth = (cache.hits) / (cache.queried - warm_queried)
    assert len(run.turns) == PROFILE.sessions * PROFILE.turns and not run.failed
    assert abs(run.cache_hits.rate - truth) < 1e-12 and 0.5 < truth < 1  # later turns hit their own history
    assert run.cache_hits.queried_tokens == cache.queried - warm_queried
    assert run.reusable_share is not None and run.reusable_share <= run.cache_hits.rate + 0.2
    assert run.engine_samples is not None and run.engine_samples.count >= 2


def test_ttft_is_reported_by_context_length_and_turn_and_judged_against_slos():
    with prefix_server(block=4, per_token_s=0.0005) as (base_url, _):
        run = _run(base_url)
    rows = run.by_context()
    assert sum(r["turns"] for r in rows) == len(run.turns)
    assert [r["context_tokens"] for r in rows] == sorted({context_bucket(t.record.prompt_tokens)
                                                          for t in run.turns}, key=lambda b: int(b.split("-")[0]))
    by_turn = run.by_turn()
    assert [r["turn"] for r in by_turn] == [1, 2, 3, 4, 5] and all(r["turns"] == 4 for r in by_turn)
    # turn 1 of a later session shares only the system prompt; its uncached part makes it the slowest per turn
    slowest = max(t.record.ttft_s for t in run.turns)
    assert run.goodput(Slo(ttft_ms=slowest * 1000)).share == 1.0
    assert run.goodput(Slo(ttft_ms=0.001)).share == 0.0
    body = run.as_json(Slo(ttft_ms=slowest * 1000))
    assert body["goodput"]["met"] == 20 and len(body["turn_records"]) == 20 and body["failed"] == 0


def test_a_refused_turn_is_counted_and_ends_its_session():
    with prefix_server(fail_turn=3) as (base_url, _):
        run = _run(base_url)
    assert len(run.failed) == 4 and all("HTTP 400" in t.record.error for t in run.failed)
    assert {t.turn for t in run.turns} == {1, 2, 3, 4}  # turn 4 (3 tool results) failed; 5 never sent
    assert run.as_json()["errors"] == ['HTTP 400: {"error": "maximum context length"}']


def test_max_context_tokens_ends_sessions_before_the_limit():
    with prefix_server() as (base_url, _):
        full = _run(base_url)
        limit = sorted(t.record.prompt_tokens for t in full.turns)[len(full.turns) // 2]
        capped = _run(base_url, AgenticProfile(**{**PROFILE.__dict__, "max_context_tokens": limit}), nonce="n2")
    assert not capped.failed and len(capped.turns) < len(full.turns)
    assert max(t.record.prompt_tokens for t in capped.turns) + PROFILE.output_len <= limit * 1.3


def test_bench_agentic_writes_a_summary_row_per_concurrency(tmp_path, capsys):
    from llmval.bench._cli import main

    with prefix_server() as (base_url, _):
        rc = main(["--agentic", "--base-url", base_url, "--model", "m", "--sessions", "3", "--turns", "3",
                   "--concurrency", "1", "3", "--output-len", "2", "--ttft-ms", "60000", "--metrics-interval-s",
                   "0.05", "--lock", str(tmp_path / "lock"), "--out", str(tmp_path / "out")])
    assert rc == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [r["concurrency"] for r in summary["rows"]] == [1, 3]
    assert all(r["turns_sent"] == 9 and r["failed"] == 0 and r["goodput_share"] == 1.0 for r in summary["rows"])
    assert all(0 < r["prefix_cache_hit_rate"] < 1 and r["client_cpu_s"] >= 0 for r in summary["rows"])
    assert (tmp_path / "out" / "agentic.png").stat().st_size > 0 and (tmp_path / "out" / "agentic-c3.json").exists()
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["agentic"] == summary["rows"]
