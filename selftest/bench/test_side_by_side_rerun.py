"""The REAL side by side re-measured on the lent H200 (selftest/data/perf/REAL-h200-side-by-side-2026-12-01-rerun)
re-judged with today's code: every summary row recomputed from the per-round values with the same CI function, and
the README's analysis (no CI inside [0.98, 1.02], none excluding 1, which point estimates are within 2 %, the two
tools moving together at C=1, the C=256 TTFT p99 made by the suite's first wave in its suite-first rounds)."""

from __future__ import annotations

import json
import math
import statistics
import tarfile

import pytest

from llmval.bench._engine_side_by_side import ratio_ci95
from llmval.bench._side_by_side import METRICS
from selftest.strategies import ROOT

DATA = ROOT / "selftest" / "data" / "perf" / "REAL-h200-side-by-side-2026-12-01-rerun"
SUMMARY = json.loads((DATA / "summary.json").read_text())


def _point(row: dict) -> tuple[str, float]:
    return ("concurrency", row["concurrency"]) if "concurrency" in row else ("rate", row["rate"])


def _rounds(kind: str, value: float) -> list[dict]:
    point = next(p for p in SUMMARY["points"] if p["kind"] == kind and p["value"] == value)
    return [r for r in point["rounds"] if r["suite"]["failed"] == 0 and r["vllm"]["failed"] == 0]


def _logs(rounds: list[dict], tool: str, metric: str) -> list[float]:
    return [math.log(r[tool][metric]) for r in rounds]


def test_every_row_recomputes_from_its_rounds_with_the_same_ci():
    assert len(SUMMARY["rows"]) == 32
    for row in SUMMARY["rows"]:
        rounds = _rounds(*_point(row))
        suite = [r["suite"][row["metric"]] for r in rounds]
        vllm = [r["vllm"][row["metric"]] for r in rounds]
        per_round = [a / b for a, b in zip(suite, vllm, strict=True)]
        mean, low, high = ratio_ci95(per_round)
        assert row["per_round"] == [round(x, 5) for x in per_round]
        assert (row["suite"], row["vllm"]) == (round(statistics.fmean(suite), 4), round(statistics.fmean(vllm), 4))
        assert row["ratio"] == round(mean, 5) and row["ci95"] == [round(low, 5), round(high, 5)]
        assert row["within_2pct"] is (low >= 0.98 and high <= 1.02) is False


def test_no_ci_excludes_one_and_ten_point_estimates_are_within_two_percent():
    rows = SUMMARY["rows"]
    assert not [r for r in rows if r["ci95"][0] > 1 or r["ci95"][1] < 1]
    within = {(f"{_point(r)[0][0]}{_point(r)[1]:g}", r["metric"]) for r in rows if 0.98 <= r["ratio"] <= 1.02}
    assert within == {("c1", "output_tok_s"), ("c1", "ttft_p50_ms"), ("c1", "ttft_p99_ms"), ("c256", "ttft_p50_ms"),
                      ("c256", "tpot_p50_ms"), ("r30", "output_tok_s"), ("r30", "ttft_p50_ms"),
                      ("r59", "output_tok_s"), ("r89", "output_tok_s"), ("r89", "ttft_p99_ms")}


@pytest.mark.parametrize("metric", METRICS)
def test_at_c1_both_tools_move_together_so_the_spread_is_the_engines(metric):
    rounds = _rounds("concurrency", 1)
    suite, vllm = _logs(rounds, "suite", metric), _logs(rounds, "vllm", metric)
    ratio = [a - b for a, b in zip(suite, vllm, strict=True)]
    assert statistics.correlation(suite, vllm) > 0.7
    assert statistics.stdev(suite) > 0.08 and statistics.stdev(vllm) > 0.08  # each tool alone moves > 8 %
    assert statistics.stdev(ratio) < min(statistics.stdev(suite), statistics.stdev(vllm))  # pairing cancels part


def _ttfts(tar: tarfile.TarFile, name: str) -> tuple[list[float], list[float]]:
    member = tar.extractfile(f"llmval-bench/side-by-side/raw/{name}.json")
    assert member is not None
    raw = json.load(member)
    start = min(raw["start_times"])
    return raw["ttfts"], [s - start for s in raw["start_times"]]


def test_c256_ttft_p99_is_made_by_the_suites_first_wave_in_its_suite_first_rounds():
    orders = [r["order"] for r in _rounds("concurrency", 256)]
    assert orders == [["vllm", "suite"], ["suite", "vllm"]] * 2
    with tarfile.open(DATA / "raw-and-versions.tgz") as tar:
        slow = {}
        for tool in ("suite", "vllm"):
            for n in range(4):
                ttfts, offsets = _ttfts(tar, f"{tool}-c256-round{n}")
                first = [t for t, o in zip(ttfts, offsets, strict=True) if o < 0.05]
                assert len(first) == 256
                slow[tool, n] = (sum(t > 1 for t in first), sum(t > 1 for t in ttfts), max(first))
    assert [slow["suite", n][:2] for n in range(4)] == [(0, 0), (58, 58), (0, 0), (42, 42)]
    assert all(slow["vllm", n][0] == 0 and slow["vllm", n][2] < 0.75 for n in range(4))


def test_the_suites_slow_first_wave_requests_were_the_last_sent_and_decoded_in_a_smaller_batch():
    with tarfile.open(DATA / "raw-and-versions.tgz") as tar:
        member = tar.extractfile("llmval-bench/side-by-side/raw/suite-c256-round1.json")
        assert member is not None
        raw = json.load(member)
    by_send = sorted(range(len(raw["ttfts"])), key=lambda i: raw["start_times"][i])[:256]
    assert raw["start_times"][by_send[-1]] - raw["start_times"][by_send[0]] < 0.006  # the burst took < 6 ms
    positions = [k for k, i in enumerate(by_send) if raw["ttfts"][i] > 1]
    assert len(positions) == 58 and min(positions) >= 140
    slow = [raw["tpots"][i] for i in by_send if raw["ttfts"][i] > 1]
    rest = [raw["tpots"][i] for i in range(len(raw["ttfts"])) if raw["ttfts"][i] <= 1]
    assert statistics.median(slow) < 0.3 * statistics.median(rest)
