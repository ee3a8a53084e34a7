"""The NIAH scorer: strict (the needle and nothing else) and RULER-compatible (substring) side by side."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, note
from hypothesis import strategies as st

from llmval.needle.scorer import ruler_aggregate, ruler_string_match_all, score_answer
from selftest.needle.strategies import answers_around, distinct_value_pairs, neutral_texts, value_kinds, values


@given(pair=distinct_value_pairs(), data=st.data())
@example(pair=("number", "4417702", "1234567"), data=None)
def test_answer_with_the_needle_and_another_candidate_fails(pair, data):
    kind, expected, other = pair
    answer = data.draw(answers_around([expected, other])) if data else f"{expected}, or maybe {other}"
    note(f"answer={answer!r}")
    score = score_answer(answer, expected, kind)
    assert score.has_expected
    assert not score.is_pass
    assert other.lower() in score.others


@given(kind=value_kinds, data=st.data())
def test_answer_with_the_needle_and_a_planted_value_of_any_shape_fails(kind, data):
    expected = data.draw(values(kind))
    planted = data.draw(values("uuid" if kind == "number" else "number"))  # a haystack value of the other shape
    answer = data.draw(answers_around([expected, planted]))
    assert not score_answer(answer, expected, kind, planted=[planted]).is_pass


@given(kind=value_kinds, data=st.data())
def test_answer_with_only_the_needle_passes(kind, data):
    expected = data.draw(values(kind))
    answer = data.draw(answers_around([expected]))
    score = score_answer(answer, expected, kind)
    assert score.is_pass, score
    assert score.ruler_score == 100.0


@pytest.mark.parametrize(("answer", "expected", "is_pass"), [
    ("The special magic number for rapid-sphinx is 1393216.", "1393216", True),
    ("1393216", "1393216", True),
    ("13932160", "1393216", False),          # inside a longer number: RULER counts it, the gate does not
    ("139321", "1393216", False),            # the 6-digit guess this small model makes
    ("1393216 1393216", "1393216", True),    # repeating the needle is not another candidate
    ("", "1393216", False),
])
def test_number_answers_are_scored_as_whole_values(answer, expected, is_pass):
    assert score_answer(answer, expected, "number").is_pass is is_pass


def test_uuid_answers_are_case_insensitive():
    expected = "23e76209-d874-4837-88e8-730a5d342c3b"
    assert score_answer(f"It is {expected.upper()}.", expected, "uuid").is_pass
    assert score_answer(f"{expected}x", expected, "uuid").is_pass  # a trailing non-hex letter ends the value


# A reference written from RULER's description (scripts/eval/synthetic/constants.py, string_match_all, and
# scripts/eval/evaluate.py, postprocess_pred), independent of the suite's code: per sample, the share of
# reference strings found case-insensitively in the prediction after replacing control characters by
# newlines and stripping; the task score is the mean over samples × 100, rounded to 2 decimals.
def reference_string_match_all(predictions: list[str], references: list[list[str]]) -> float:
    total = 0.0
    for prediction, refs in zip(predictions, references, strict=True):
        cleaned = re.sub(r"[\x00-\x1f]", "\n", prediction.strip()).strip().lower()
        total += sum(1 for r in refs if r.lower() in cleaned) / len(refs)
    return round(total / len(predictions) * 100, 2)


RULER_EXAMPLES = [
    (["The number is 1234567."], [["1234567"]], 100.0),
    (["12345678"], [["1234567"]], 100.0),
    (["no idea"], [["1234567"]], 0.0),
    (["ABC-def"], [["abc-DEF"]], 100.0),
    (["a\x00b 7654321\x1f"], [["7654321", "1111111"]], 50.0),
    (["x", "1234567 and 7654321", "7654321"], [["1234567"], ["1234567", "7654321"], ["1234567"]], 33.33),
    (["\t 9999999 \n"], [["9999999"]], 100.0),
]


@pytest.mark.parametrize(("predictions", "references", "score"), RULER_EXAMPLES)
def test_ruler_score_matches_the_reference_on_examples(predictions, references, score):
    ours = ruler_aggregate([ruler_string_match_all(p, r) for p, r in zip(predictions, references, strict=True)])
    assert ours == reference_string_match_all(predictions, references) == score


@given(predictions=st.lists(st.text(max_size=30), min_size=1, max_size=5), data=st.data())
def test_ruler_score_matches_the_reference_on_any_text(predictions, data):
    references = [data.draw(st.lists(st.one_of(neutral_texts.filter(bool), st.just(p[:5] or "x")), min_size=1,
                                     max_size=3)) for p in predictions]
    ours = ruler_aggregate([ruler_string_match_all(p, r) for p, r in zip(predictions, references, strict=True)])
    assert ours == reference_string_match_all(predictions, references)
