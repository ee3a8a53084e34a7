"""The haystack builder: the needle once, at its depth, within budget; the same seed, the same bytes.

Token counts here come from `whitespace_token_count`, an OFFLINE STAND-IN (whitespace pieces + 4 per
message), not a model tokenizer: the laws hold for any deterministic, monotone counter, and the live
grid uses the server's own /tokenize instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from llmval.grid import fit_units
from llmval.inventory import NiahSpec
from llmval.needle._words import FILLER_CONNECTIVES, FILLER_OBJECTS, FILLER_PLACES, FILLER_SUBJECTS
from llmval.needle.builder import (
    PROMPT_HEAD,
    hard_case,
    plain_case,
    prefix_case,
    whitespace_token_count,
)
from llmval.needle.grid import build_trial, plan_cells
from selftest.needle.strategies import depths, seeds, value_kinds
from selftest.strategies import ROOT

budgets = st.integers(min_value=120, max_value=3000)


@st.composite
def fitted_cases(draw):
    """(case, asked needle, n units, budget): a drawn case fitted to a drawn budget with the stand-in."""
    variant, kind, seed, budget = draw(st.sampled_from(["plain", "hard", "prefix"])), draw(value_kinds), \
        draw(seeds), draw(budgets)
    if variant == "plain":
        case = plain_case(seed, kind, draw(depths), stream_units=budget)
    elif variant == "hard":
        case = hard_case(seed, kind, draw(depths), stream_units=budget // 4)
    else:
        case = prefix_case(seed, kind, draw(st.lists(depths, min_size=1, max_size=5, unique=True)),
                           stream_units=budget)
    asked = draw(st.sampled_from(case.needles))
    n, tokens = fit_units(lambda k: whitespace_token_count(case.messages(k, asked)), budget, len(case.units))
    note(f"variant={variant} kind={kind} seed={seed} budget={budget} n={n} tokens={tokens}")
    return case, asked, n, budget


@given(fitted=fitted_cases())
def test_prompt_fits_the_budget_and_is_the_largest_that_does(fitted):
    case, asked, n, budget = fitted
    assert whitespace_token_count(case.messages(n, asked)) <= budget
    assert n == len(case.units) or whitespace_token_count(case.messages(n + 1, asked)) > budget


@given(fitted=fitted_cases())
def test_every_needle_appears_exactly_once(fitted):
    case, asked, n, _ = fitted
    content = case.messages(n, asked)[0]["content"]
    context = case.context(n)
    for needle in case.needles:
        assert context.count(needle.sentence()) == 1
        assert content.count(needle.value) == 1
    assert content.count(asked.key) == 2  # once in the needle, once in the question
    assert content.startswith(PROMPT_HEAD.format(plural=f"{asked.kind}s"))


# The longest generated sentence, in words (units of the plain and prefix haystacks).
LONGEST_SENTENCE_WORDS = 1 + sum(max(len(s.split()) for s in words) for words in (
    FILLER_CONNECTIVES, FILLER_SUBJECTS, FILLER_OBJECTS, FILLER_PLACES))


@given(fitted=fitted_cases())
def test_needle_sits_at_the_requested_depth(fitted):
    case, _, n, _ = fitted
    context = case.context(n)
    sentences = {p.needle.sentence(): context.index(p.needle.sentence()) for p in case.placements(n)}
    for placement in case.placements(n):
        at = sentences[placement.needle.sentence()]
        other_needle_words = sum(len(s.split()) for s, i in sentences.items() if i < at)
        filler_words_before = len(context[:at].split()) - other_needle_words
        assert filler_words_before == sum(len(u.split()) for u in case.units[:placement.unit_index])
        # the nearest sentence boundary is at most half a sentence away (hard: every unit is a sentence)
        half_sentence = 0.5 if case.planted else LONGEST_SENTENCE_WORDS / 2
        note(f"depth={placement.depth} actual={placement.actual_depth} n={n}")
        assert abs(placement.unit_index - placement.depth * n) <= half_sentence


@given(variant=st.sampled_from(["plain", "hard", "prefix_cache"]), kind=value_kinds,
       seed=st.integers(min_value=0, max_value=10**6), length=st.sampled_from([256, 512, 1024]),
       depth=st.sampled_from([0.0, 0.5, 1.0]))
def test_same_seed_gives_byte_identical_prompts(variant, kind, seed, length, depth):
    spec = NiahSpec(endpoint="e", seed=seed, context_lengths=[length], depths=[0.0, 0.5, 1.0], variants=[variant],
                    values=[kind])
    cell = next(c for c in plan_cells(spec, 8192) if c.depth == depth)
    first = build_trial(spec, cell, 0, whitespace_token_count)
    second = build_trial(spec, cell, 0, whitespace_token_count)
    assert json.dumps(first.messages).encode() == json.dumps(second.messages).encode()
    assert first.sha256 == second.sha256


GOLDEN_SPEC = {"endpoint": "e", "seed": 7, "context_lengths": [512], "depths": [0.5],
               "variants": ["plain", "hard", "prefix_cache"], "values": ["number", "uuid"]}
GOLDEN_SCRIPT = """
import json, sys
from llmval.inventory import NiahSpec
from llmval.needle.builder import whitespace_token_count
from llmval.needle.grid import build_trial, plan_cells
spec = NiahSpec(**json.loads(sys.argv[1]))
print(json.dumps({c.id: build_trial(spec, c, 0, whitespace_token_count).sha256 for c in plan_cells(spec, 8192)}))
"""


def _hashes_in_subprocess(hash_seed: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run([sys.executable, "-c", GOLDEN_SCRIPT, json.dumps(GOLDEN_SPEC)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.subprocess
def test_prompts_do_not_depend_on_the_process_hash_seed():
    assert _hashes_in_subprocess("1") == _hashes_in_subprocess("4242")


@pytest.mark.subprocess
def test_prompts_match_the_pinned_hashes():
    """A change here changes every night's prompts: update the pins only on purpose, and say so."""
    pinned = json.loads((ROOT / "selftest" / "needle" / "data" / "pinned-prompt-hashes.json").read_text())
    assert _hashes_in_subprocess("0") == pinned
