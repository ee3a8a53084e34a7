"""`python -m llmval bench --side-by-side`: the summary rows (ratio, 95 % CI), the knee rates, vLLM's argv for
the suite's prompts, and the pacing math (vLLM's schedule rebuilt from its seed, achieved rate, lag)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import httpx
import numpy as np
import pytest

from llmval.bench._engine_side_by_side import ratio_ci95
from llmval.bench._pacing import _lag_row, vllm_schedule
from llmval.bench._side_by_side import METRICS, Point, SideBySide, knee_rates
from llmval.bench._vllm import VllmRun
from llmval.load._prompts import WordPrompts


def _tool(value: float, **extra) -> dict:
    return {**{m: value for m in METRICS}, "failed": 0, "completed": 100, "duration_s": 2.0, **extra}


def _rows(points: list[Point]) -> list[dict]:
    session = SideBySide.__new__(SideBySide)  # rows() reads only the points
    session.points = points
    return session.rows()


def test_a_row_is_the_mean_of_each_tool_the_ratio_of_the_rounds_and_its_interval():
    point = Point("concurrency", 64, rounds=[{"suite": _tool(99.0), "vllm": _tool(100.0)},
                                            {"suite": _tool(101.0), "vllm": _tool(100.0)},
                                            {"suite": _tool(100.0), "vllm": _tool(100.0)}])
    rows = _rows([point])
    assert [r["metric"] for r in rows] == list(METRICS)
    row = rows[0]
    mean, low, high = ratio_ci95([0.99, 1.01, 1.0])
    assert row["concurrency"] == 64 and row["suite"] == 100.0 and row["vllm"] == 100.0
    assert row["ratio"] == pytest.approx(mean, abs=1e-5) and row["ci95"] == pytest.approx([low, high], abs=1e-5)
    assert row["within_2pct"] is (low >= 0.98 and high <= 1.02) and row["rounds"] == 3


def test_rounds_with_failed_requests_are_left_out_and_one_round_has_no_upper_bound():
    point = Point("rate", 50.0, rounds=[{"suite": _tool(10.0), "vllm": _tool(10.0)},
                                        {"suite": _tool(10.0, failed=3), "vllm": _tool(10.0)}])
    row = _rows([point])[0]
    assert row["rate"] == 50.0 and row["rounds"] == 1 and row["ci95"][1] is None and not row["within_2pct"]


def test_knee_rates_are_fractions_of_what_vllm_completed_per_second_at_the_largest_c():
    point = Point("concurrency", 256, rounds=[{"vllm": _tool(0, completed=1000, duration_s=4.0)},
                                             {"vllm": _tool(0, completed=1000, duration_s=5.0)}])
    assert knee_rates(point) == [56.0, 112.0, 169.0, 202.0]  # of 225 req/s
    slow = Point("concurrency", 4, rounds=[{"vllm": _tool(0, completed=8, duration_s=4.0)}])
    assert knee_rates(slow) == [0.5, 1.0, 1.5, 1.8]


def test_vllm_reads_the_suite_prompts_where_its_bench_serve_can_else_its_random_dataset():
    run = VllmRun(base_url="http://h:1", model="m", tokenizer=Path("/t"), input_len=128, output_len=64,
                  concurrency=16, num_prompts=64, warmups=16, seed=7, dataset_path=Path("/d.jsonl"))
    custom = run.argv(Path("/r"), "x.json", {"--dataset-path", "--custom-output-len", "--skip-chat-template"})
    assert custom[custom.index("--dataset-name") + 1] == "custom" and "--disable-shuffle" not in custom
    assert custom[custom.index("--custom-output-len") + 1] == "64" and "--skip-chat-template" in custom
    assert custom[custom.index("--max-concurrency") + 1] == "16"
    fallback = run.argv(Path("/r"), "x.json", {"--custom-output-len", "--skip-chat-template"})  # no pandas
    assert fallback[fallback.index("--dataset-name") + 1] == "random"
    assert fallback[fallback.index("--random-input-len") + 1] == "128"
    unbounded = VllmRun(base_url="http://h:1", model="m", tokenizer=Path("/t"), input_len=8, output_len=4,
                        concurrency=1, num_prompts=10, warmups=0, seed=1, request_rate=100.0, max_concurrency=None)
    argv = unbounded.argv(Path("/r"), "x.json")
    assert "--max-concurrency" not in argv and argv[argv.index("--request-rate") + 1] == "100.0"


def test_vllms_schedule_is_rebuilt_from_its_seed_as_get_request_draws_it():
    np.random.seed(42)  # what `vllm bench serve --seed 42` does in main, then one gamma draw per request
    gaps = [np.random.gamma(shape=1.0, scale=1 / 50.0) for _ in range(100)]
    cumulative = np.cumsum(gaps)
    expected = cumulative * (100 / 50.0) / cumulative[-1]
    assert vllm_schedule(100, 50.0, 42) == pytest.approx(list(expected))
    assert vllm_schedule(100, 50.0, 42)[-1] == pytest.approx(2.0)


def test_a_pacing_row_is_the_rate_over_the_last_send_and_the_lag_percentiles():
    row = _lag_row(100.0, [0.0001] * 98 + [0.002, 0.003], last_send_s=1.0, n=100)
    assert row["achieved_rps"] == 100.0 and row["rate_error"] == 0.0
    assert row["lag_p50_ms"] == pytest.approx(0.1) and row["lag_max_ms"] == pytest.approx(3.0)
    assert math.isclose(row["lag_p99_ms"], 2.01, rel_tol=1e-6)  # numpy-linear between 2 and 3 ms


class _Tokenizer:
    """/tokenize of a GPT-2-like BPE: a space-led known word is one token, anything else one per 3 chars; BOS."""

    def __init__(self, singles: set[str]):
        self.singles = singles

    def handle(self, request: httpx.Request) -> httpx.Response:
        import json

        body = json.loads(request.content)
        tokens = []
        for i, word in enumerate(body["prompt"].split(" ")):
            if not word:
                continue  # the space belongs to the next word
            known = word in self.singles and (i > 0 or word != "kernel")  # "kernel" splits when it opens a text
            tokens += [1] if known else [2] * max(1, math.ceil(len(word) / 3))
        return httpx.Response(200, json={"tokens": ([0] if body.get("add_special_tokens", True) else []) + tokens})


def _maker(singles: set[str], input_len: int = 32) -> WordPrompts:
    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(_Tokenizer(singles).handle),
                                     base_url="http://t") as client:
            return await WordPrompts.create(client, model="m", input_len=input_len, endpoint="t")

    return asyncio.run(go())


def test_word_prompts_are_exact_unique_and_start_with_a_word_that_stays_one_token():
    from llmval.load._prompts import WORDS

    maker = _maker(set(WORDS[:40]) | {"kernel"})
    assert maker.exact and maker.n_words == 31  # 32 tokens: BOS + 31 words
    assert "kernel" in maker.rest and "kernel" not in maker.first
    texts = maker.texts("n1", 50)
    assert len(set(texts)) == 50 and len({t.split()[0:16].__str__() for t in texts}) == 50
    assert all(len(t.split()) == 31 for t in texts) and texts == maker.texts("n1", 50)
    assert maker.texts("n2", 1) != maker.texts("n1", 1)


def test_word_prompts_say_when_they_cannot_be_exact():
    assert not _maker({"river", "stone"}).exact  # too few one-token words: the callers calibrate per prompt


# --- against the calibration source (truth known) -----------------------------------------------------------

def test_rows_against_the_source_give_each_tool_over_the_truth_per_round():
    truth = {m: 100.0 for m in METRICS}
    point = Point("concurrency", 16, rounds=[{"suite": _tool(101.0, truth=truth), "vllm": _tool(97.0, truth=truth)},
                                            {"suite": _tool(99.0, truth=truth), "vllm": _tool(98.0, truth=truth)}])
    row = _rows([point])[0]
    assert row["truth"] == 100.0
    assert row["suite_vs_truth"] == pytest.approx(math.sqrt(1.01 * 0.99), abs=1e-5)
    assert row["vllm_vs_truth"] == pytest.approx(math.sqrt(0.97 * 0.98), abs=1e-5)
    assert row["suite_max_error"] == pytest.approx(0.01) and row["vllm_max_error"] == pytest.approx(0.03)
    assert row["vllm_vs_truth_ci95"][0] < row["vllm_vs_truth"] < row["vllm_vs_truth_ci95"][1]
    engine_row = _rows([Point("concurrency", 16, rounds=[{"suite": _tool(1.0), "vllm": _tool(1.0)}])])[0]
    assert "truth" not in engine_row  # an engine's rows have no truth to compare with


def test_the_source_takes_the_engines_timing_point_by_point_from_its_summary():
    from llmval.bench._side_by_side import engine_like_schedules

    summary = {"rows": [{"concurrency": 64, "metric": "ttft_p50_ms", "suite": 139.2, "vllm": 148.8},
                        {"concurrency": 64, "metric": "tpot_p50_ms", "suite": 3.45, "vllm": 3.97},
                        {"concurrency": 64, "metric": "output_tok_s", "suite": 14389.0, "vllm": 12593.0},
                        {"rate": 30.0, "metric": "ttft_p50_ms", "suite": 22.0, "vllm": 23.0},
                        {"rate": 30.0, "metric": "tpot_p50_ms", "suite": 2.9, "vllm": 2.9},
                        {"rate": 59.0, "metric": "ttft_p50_ms", "suite": 26.0, "vllm": 30.0}]}  # no TPOT: no schedule
    schedules = engine_like_schedules(summary["rows"], output_len=128)
    assert set(schedules) == {("concurrency", 64.0), ("rate", 30.0)}
    c64 = schedules[("concurrency", 64.0)]
    assert c64.ttft_s == pytest.approx(0.144) and c64.interval_s == pytest.approx(0.00371)
    assert c64.tokens_per_chunk == 1 and c64.output_len == 128


def test_longer_windows_size_later_rounds_by_the_last_rounds_rate():
    from llmval.bench._side_by_side import parser

    session = SideBySide.__new__(SideBySide)
    session.args = parser().parse_args(["--run-seconds", "8"])
    point = Point("concurrency", 16)
    assert session._shape(point) == (64, 16, 16, None)  # the first round: k·C
    point.rounds.append({t: _tool(1.0, completed=64, duration_s=1.6) for t in ("suite", "vllm")})  # 40 req/s
    assert session._shape(point) == (320, 16, 16, None)  # 8 s at 40 req/s, whole waves of C
    session.args = parser().parse_args([])
    assert session._shape(point) == (64, 16, 16, None)  # --run-seconds 0: always k·C


def test_attribution_names_the_tool_off_the_truth_or_the_engines_own_variation():
    from llmval.bench._side_by_side import attribute

    def engine(metric: str, ratio: float, low: float, high: float | None) -> dict:
        return {"concurrency": 64, "metric": metric, "ratio": ratio, "ci95": [low, high], "rounds": 5,
                "within_2pct": low >= 0.98 and high is not None and high <= 1.02}

    def source(metric: str, suite: float, vllm: float) -> dict:
        return {"concurrency": 64, "metric": metric, "truth": 100.0, "suite_vs_truth": suite, "vllm_vs_truth": vllm,
                "rounds": 3}

    engine_rows = [engine("ttft_p50_ms", 0.93, 0.80, 1.08), engine("tpot_p50_ms", 0.99, 0.81, 1.20),
                   engine("ttft_p99_ms", 1.20, 0.95, 1.70), engine("output_tok_s", 1.0, 0.99, 1.01),
                   {**engine("output_tok_s", 1.0, 0.9, 1.1), "concurrency": 256}]
    source_rows = [source("ttft_p50_ms", 1.006, 1.124), source("tpot_p50_ms", 1.0, 1.003),
                   source("ttft_p99_ms", 1.01, 1.17), source("output_tok_s", 0.996, 0.957)]
    ttft, tpot, p99, within, unmatched = attribute(engine_rows, source_rows)
    assert ttft["off"] == ["vllm"] and ttft["predicted_ratio"] == pytest.approx(1.006 / 1.124, abs=1e-5)
    assert ttft["predicted_inside_ci"] and "vLLM +12.4%" in ttft["verdict"] and "consistent" in ttft["verdict"]
    assert tpot["off"] == [] and "engine's variation between rounds" in tpot["verdict"]
    assert not p99["predicted_inside_ci"] and "ran differently" in p99["verdict"]
    assert within["verdict"] == "shown within 2%"
    assert unmatched["off"] is None and "not attributed" in unmatched["verdict"]
