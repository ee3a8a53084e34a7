"""Judge-free scoring of a needle answer.

Two scores are kept side by side:

- the gate (`score_answer(...).is_pass`): the expected value is present as a whole value, and no
  other candidate is: neither another value of the same shape (7-digit number or UUID) nor any value
  planted in the haystack. An answer that lists every number it saw fails.
- before either, the answer must be a retrieval at all (`llmval.grid.not_a_retrieval`, given the prompt, the
  request's `max_tokens` and usage's `completion_tokens`): an echo of the prompt, or an answer longer than
  `max_tokens` allows, holds the needle without having retrieved it, and fails naming why (`not_retrieval`).
- RULER's `string_match_all` (`ruler_string_match_all`): the percentage of reference strings found,
  case-insensitively, as substrings of the prediction after RULER's post-processing (control
  characters become newlines, then strip). Kept for comparability with published RULER numbers.

>>> score_answer("The number is 4417702.", "4417702", "number").is_pass
True
>>> score_answer("4417702 or 1234567", "4417702", "number").is_pass
False
>>> score_answer(" The number is 4417702." * 20, "4417702", "number", max_tokens=64).not_retrieval[:24]
'the answer has 80 words:'
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

from ..grid import not_a_retrieval
from .builder import ValueKind

NUMBER_RE = re.compile(r"(?<!\d)\d{7}(?!\d)")
UUID_RE = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                     r"(?![0-9a-fA-F])")
CONTROL_CHARS_RE = re.compile(r"[\x00-\x1f]")
VALUE_RES = {"number": NUMBER_RE, "uuid": UUID_RE}


@dataclasses.dataclass(frozen=True)
class Score:
    """The verdict on one answer."""

    is_pass: bool
    has_expected: bool
    others: tuple[str, ...]
    """Candidate values in the answer other than the expected one (sorted, lower-case)."""
    ruler_score: float
    """RULER string_match_all for this one sample, 0..100."""
    not_retrieval: str = ""
    """Why the answer is not a retrieval at all (an echo, longer than max_tokens allows); "" when it may be one."""


def ruler_postprocess(prediction: str) -> str:
    """RULER's `postprocess_pred`: strip, control characters to newlines, strip again."""
    return CONTROL_CHARS_RE.sub("\n", prediction.strip()).strip()


def ruler_string_match_all(prediction: str, references: Sequence[str]) -> float:
    """RULER's `string_match_all` for one sample: % of references that are substrings (case-insensitive)."""
    text = ruler_postprocess(prediction).lower()
    return 100.0 * sum(1.0 for r in references if r.lower() in text) / len(references)


def candidates(answer: str, kind: ValueKind, planted: Iterable[str] = ()) -> set[str]:
    """Every value-shaped string in `answer`, plus any planted haystack value it contains (lower-case)."""
    found = {m.group(0).lower() for m in VALUE_RES[kind].finditer(answer)}
    lowered = answer.lower()
    found |= {p.lower() for p in planted if p and p.lower() in lowered}
    return found


def score_answer(answer: str, expected: str, kind: ValueKind, planted: Iterable[str] = (), *, prompt: str = "",
                 max_tokens: int | None = None, completion_tokens: int | None = None,
                 generated: str | None = None) -> Score:
    """Score `answer` against the `expected` value (see the module docstring). `prompt` (the messages' text),
    `max_tokens` and `completion_tokens` (usage's claim) judge whether the answer is a retrieval at all;
    `generated`: every text the model produced when there is more than `answer` (reasoning)."""
    text = ruler_postprocess(answer)
    found = candidates(text, kind, planted)
    has_expected = expected.lower() in {m.group(0).lower() for m in VALUE_RES[kind].finditer(text)}
    others = tuple(sorted(found - {expected.lower()}))
    why = not_a_retrieval(answer if generated is None else generated, prompt=prompt, max_tokens=max_tokens,
                          completion_tokens=completion_tokens)
    return Score(is_pass=has_expected and not others and not why, has_expected=has_expected, others=others,
                 ruler_score=ruler_string_match_all(answer, [expected]), not_retrieval=why)


def ruler_aggregate(sample_scores: Sequence[float]) -> float:
    """RULER's task score: the mean of per-sample scores, rounded to 2 decimals."""
    return round(sum(sample_scores) / len(sample_scores), 2) if sample_scores else 0.0
