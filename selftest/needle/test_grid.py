"""Grid planning, length fitting and gates: pure logic, no server."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmval.grid import BudgetError, default_context_lengths, fit_units, pass_gates
from llmval.inventory import NiahSpec
from llmval.needle.grid import Cell, CellResult, TrialResult, plan_cells


def test_cell_ids_name_endpoint_length_depth_and_variant():
    spec = NiahSpec(endpoint="local-vllm", context_lengths=[4096], depths=[0.5], variants=["plain", "hard"],
                    values=["number", "uuid"])
    assert [c.id for c in plan_cells(spec, 8192)] == [
        "local-vllm-4096-d50", "local-vllm-4096-d50-uuid", "local-vllm-4096-d50-hard", "local-vllm-4096-d50-hard-uuid"]


@pytest.mark.parametrize(("max_model_len", "lengths"), [
    (8192, [1024, 2048, 4096, 8192]),
    (2000, [1024, 2000]),
    (262144, [8192, 16384, 32768, 65536, 131072, 262144][-7:]),
])
def test_default_lengths_spread_up_to_max_model_len(max_model_len, lengths):
    got = default_context_lengths(max_model_len)
    assert got[-1] == max_model_len and len(got) <= 7 and got == sorted(got)
    assert got[-len(lengths):] == lengths


def test_the_longest_cell_leaves_room_for_the_answer():
    spec = NiahSpec(endpoint="e", context_lengths=[1024, 8192], max_tokens=64, margin_tokens=16)
    assert {c.length: c.target_tokens for c in plan_cells(spec, 8192)} == {1024: 1024, 8192: 8112}


def test_a_grid_without_lengths_or_max_model_len_is_a_clear_error():
    with pytest.raises(ValueError, match="declare one of them"):
        plan_cells(NiahSpec(endpoint="e"), None)


def test_depths_outside_zero_to_one_are_rejected():
    with pytest.raises(ValueError, match=r"fractions of the haystack"):
        NiahSpec(endpoint="e", depths=[50])


unit_costs = st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=400)


@given(costs=unit_costs, base=st.integers(min_value=0, max_value=50), budget=st.integers(min_value=0, max_value=3000))
def test_fit_units_finds_the_largest_prefix_that_fits(costs, base, budget):
    def count(n):
        return base + sum(costs[:n])

    if base > budget:
        with pytest.raises(BudgetError):
            fit_units(count, budget, len(costs))
        return
    n, tokens = fit_units(count, budget, len(costs))
    assert tokens == count(n) <= budget
    assert n == len(costs) or count(n + 1) > budget


def _result(length: int, is_pass: bool, depth: float = 0.5) -> CellResult:
    cell = Cell("g", "plain", "number", length, depth, length)
    trial = TrialResult(trial=0, seed=0, prompt_sha256="0" * 64, expected="1234567", calibrated_tokens=length,
                        prompt_tokens=length, n_units=1, actual_depth=depth, answer="", finish_reason="stop",
                        is_pass=is_pass, others=[], ruler_score=100.0 * is_pass, elapsed_s=0.1)
    return CellResult(cell, [trial])


def test_gates_name_the_missed_cells():
    spec = NiahSpec(endpoint="e", all_pass_up_to=2048, min_overall=0.75)
    results = [_result(1024, True), _result(2048, True), _result(4096, False), _result(4096, True, 0.0)]
    verdicts = {v.check: v for v in pass_gates(spec, results, "accuracy.niah")}
    assert verdicts["accuracy.niah.all_pass_up_to"].ok
    assert verdicts["accuracy.niah.min_overall"].ok
    assert verdicts["accuracy.niah.min_overall"].offenders == ("g-4096-d50",)
    results[1] = _result(2048, False)
    verdicts = {v.check: v for v in pass_gates(spec, results, "accuracy.niah")}
    assert not verdicts["accuracy.niah.all_pass_up_to"].ok
    assert verdicts["accuracy.niah.all_pass_up_to"].offenders == ("g-2048-d50",)
    assert not verdicts["accuracy.niah.min_overall"].ok  # 2/4 < 75%


@given(grid=st.lists(st.tuples(st.sampled_from([1024, 2048, 4096]), st.booleans()), min_size=1, max_size=12),
       limit=st.sampled_from([1024, 2048, 4096]), threshold=st.sampled_from([0.0, 0.5, 0.95, 1.0]))
def test_gate_verdicts_agree_with_the_grid(grid, limit, threshold):
    spec = NiahSpec(endpoint="e", all_pass_up_to=limit, min_overall=threshold)
    results = [_result(length, ok, depth=i / 100) for i, (length, ok) in enumerate(grid)]
    verdicts = {v.check: v for v in pass_gates(spec, results, "accuracy.niah")}
    within = [ok for length, ok in grid if length <= limit]
    assert verdicts["accuracy.niah.all_pass_up_to"].ok == all(within)
    assert verdicts["accuracy.niah.min_overall"].ok == (sum(ok for _, ok in grid) / len(grid) >= threshold)
    assert len(verdicts["accuracy.niah.min_overall"].offenders) == sum(not ok for _, ok in grid)
