"""Needle in a haystack: one test per grid cell, then the inventory's gates over the whole grid.

Run it alone and serially: `pytest tests/accuracy -p no:xdist` (cells print a progress line each).
A cell within `all_pass_up_to` must pass; a miss above it is an xfail that the overall gate counts.
"""

import pytest

from llmval.needle.grid import observed, prompt_token_offenders

pytestmark = pytest.mark.accuracy


def test_needle_is_retrieved(niah_cell, niah_result, niah_spec, expect):
    expect.measure(niah_cell.grid, f"niah.{niah_cell.id}.pass_rate", niah_result.pass_rate, "fraction")
    for trial in niah_result.trials:  # the prompt's identity: the same every night
        expect.measure(niah_cell.grid, f"niah.{niah_cell.id}.{trial.trial}.prompt_sha256", trial.prompt_sha256)
    expected = " / ".join(t.expected for t in niah_result.trials) + " and no other candidate value"
    strict = niah_spec.all_pass_up_to is not None and niah_cell.length <= niah_spec.all_pass_up_to
    if not niah_result.is_pass and not strict and not niah_result.not_retrieval:  # an echo fails at any length
        scope = f"above all_pass_up_to={niah_spec.all_pass_up_to}" if niah_spec.all_pass_up_to else \
            "no all_pass_up_to declared"
        pytest.xfail(f"missed: {observed(niah_result)[:300]}; expected {expected}; {scope}, so only the "
                     "min_overall gate counts it")
    expect(niah_cell.grid, "accuracy.niah.cell", expected=expected, observed=observed(niah_result),
           ok=niah_result.is_pass, hint=f"every cell up to {niah_spec.all_pass_up_to} tokens must pass; "
           "see reports/niah-*.json for the prompt hash and the heatmap" + (
               f"; {niah_result.not_retrieval}: the server did not generate an answer to the question (an echoing "
               "proxy or stub behind the endpoint?)" if niah_result.not_retrieval else ""))


def test_niah_cells_up_to_limit_all_pass(niah_grid, niah_gates, expect):
    verdict = niah_gates.get("accuracy.niah.all_pass_up_to")
    if verdict is None:
        pytest.skip(f"[{niah_grid}] the inventory declares no niah.all_pass_up_to")
    expect(niah_grid, verdict.check, expected=verdict.expected, observed=verdict.observed, ok=verdict.ok,
           hint=f"missed cells: {list(verdict.offenders)}", evidence="reports/niah-" + niah_grid + ".json")


def test_niah_overall_pass_rate_meets_gate(niah_grid, niah_gates, expect):
    verdict = niah_gates["accuracy.niah.min_overall"]
    expect(niah_grid, verdict.check, expected=verdict.expected, observed=verdict.observed, ok=verdict.ok,
           hint=f"missed cells: {list(verdict.offenders)}", evidence="reports/niah-" + niah_grid + ".json")


def test_niah_prompt_tokens_match_server_usage(niah_grid, niah_measured, niah_spec, expect):
    offenders = prompt_token_offenders(niah_spec, niah_measured)
    expect(niah_grid, "accuracy.niah.prompt_tokens",
           expected=f"usage.prompt_tokens within {niah_spec.prompt_tokens_tolerance:.0%} of /tokenize",
           observed=offenders or "all within", ok=not offenders,
           hint="the length calibration does not match what the server bills: a different tokenizer or chat "
                "template is being served")
