"""`python -m llmval bench`: the ratio's confidence interval and the calibrated table/summary math."""

from __future__ import annotations

import math

import pytest

from llmval.bench._calibrated import CalibratedCase, CaseResult, summary, table
from llmval.bench._engine_side_by_side import ratio_ci95


def test_ci_of_identical_rounds_is_the_ratio_itself_and_one_round_is_unbounded():
    assert ratio_ci95([1.02, 1.02, 1.02]) == pytest.approx((1.02, 1.02, 1.02))
    assert ratio_ci95([0.97])[2] == math.inf


def test_ci_widens_with_spread_and_contains_the_mean():
    tight = ratio_ci95([0.99, 1.00, 1.01, 1.00])
    wide = ratio_ci95([0.90, 1.10, 0.95, 1.05])
    assert tight[1] < tight[0] < tight[2] and wide[1] < wide[0] < wide[2]
    assert wide[2] - wide[1] > tight[2] - tight[1]
    # Student t with 3 degrees of freedom on the log ratios (half width 3.182 s / sqrt(4))
    logs = [math.log(x) for x in (0.90, 1.10, 0.95, 1.05)]
    mean = sum(logs) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / 3)
    assert wide[2] == pytest.approx(math.exp(mean + 3.182 * sd / 2))


def test_summary_is_the_largest_relative_error_over_metrics_and_cases():
    truth = {"decode_tok_s": 100.0, "output_throughput": 50.0, "median_ttft_ms": 200.0, "p99_ttft_ms": 200.0}
    a = CaseResult(CalibratedCase(1, 8, 1), truth, suite={**truth, "p99_ttft_ms": 204.0},
                   vllm={**truth, "decode_tok_s": 99.0})
    b = CaseResult(CalibratedCase(16, 32, 16), truth, suite={**truth, "output_throughput": 49.5},
                   vllm={**truth, "median_ttft_ms": 203.0})
    line = summary([a, b])
    assert line == {"suite_max_err": 0.02, "vllm_max_err": 0.015,
                    "suite_vs_vllm_max_diff": pytest.approx(0.02, abs=1e-4)}
    assert "TTFT p99 ms" in table([a, b])
