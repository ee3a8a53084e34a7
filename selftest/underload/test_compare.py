"""The judging rules of correctness under load, one law each (llmval.underload.compare), and the in-flight math."""

from __future__ import annotations

import pytest

from llmval.underload import (
    CRITERIA,
    Interval,
    ProbeAnswer,
    ProbeSample,
    Window,
    judge_gate,
    judge_probe,
    mean_in_flight,
)

NIAH, VALIDITY, VALUES = CRITERIA


def answer(ok: bool = True, text: str = "The number is 4417702.", *, valid: bool | None = None,
           error: str | None = None) -> ProbeAnswer:
    valid = ok if valid is None else valid
    return ProbeAnswer("p", text, valid, ok, "found 4417702" if ok else f"missed: answered {text!r}", error=error)


def sample(idle: ProbeAnswer, loaded: ProbeAnswer, after: ProbeAnswer | None = None, *, in_flight: float = 4.0,
           kind: str = "niah", pid: str = "niah c-1024-d50", failures: tuple[str, ...] = ()) -> ProbeSample:
    return ProbeSample(pid, kind, 4, idle, loaded, after if after is not None else idle, in_flight=in_flight,
                       load_failures=failures)


@pytest.mark.parametrize(("s", "status"), [
    (sample(answer(), answer()), "kept"),
    (sample(answer(), answer(text="It is 4417702.")), "kept"),            # other words, same judged answer
    (sample(answer(), answer(False, "1234567")), "worse"),
    (sample(answer(False, "1234567"), answer(False, "7654321")), "no_reference"),
    (sample(answer(False, "1234567"), answer()), "no_reference"),         # better under load is no regression
    (sample(answer(), answer(), answer(False, "99")), "unstable"),         # idle itself disagrees: not the load's
    (sample(answer(), answer(False, "1"), in_flight=3.5), "not_held"),     # 3.5 < 0.9 x 4: not judged, not broken
    (sample(answer(), answer(), failures=("HTTP 503",)), "not_held"),
    (sample(answer(), answer(False, "", error="ReadTimeout")), "error"),
])
def test_each_probe_is_judged_by_the_first_rule_that_applies(s, status):
    assert judge_probe(s, NIAH).status == status


def test_a_worse_probe_names_both_answers_and_the_concurrency():
    detail = judge_probe(sample(answer(), answer(False, "1234567")), NIAH).detail
    assert detail == "idle: found 4417702 | under load (C=4): missed: answered '1234567'"


def test_text_mode_breaks_on_other_words_and_needs_the_same_text_idle_twice():
    assert judge_probe(sample(answer(), answer(text="It is 4417702.")), NIAH, "text").status == "text_changed"
    assert judge_probe(sample(answer(), answer(), answer(text="Sure: 4417702.")), NIAH, "text").status == "unstable"
    assert judge_probe(sample(answer(), answer(text="It is 4417702.")), NIAH, "judged").status == "kept"


def test_validity_and_values_are_judged_on_their_own_attribute():
    s = sample(answer(True), answer(False, valid=True), kind="toolcall", pid="toolcall strict/flat-0")
    assert judge_probe(s, VALIDITY).status == "kept"
    assert judge_probe(s, VALUES).status == "worse"


def test_a_gate_is_broken_by_any_worse_probe_even_beside_unjudged_ones():
    gate = judge_gate([sample(answer(), answer(False, "1")), sample(answer(), answer(), in_flight=1.0,
                                                                     pid="niah c-1024-d0")], NIAH)
    assert gate.outcome == "broken" and list(gate.observed) == ["niah c-1024-d50"]


def test_a_gate_with_an_unjudged_probe_and_none_worse_could_not_check():
    gate = judge_gate([sample(answer(), answer()), sample(answer(), answer(), in_flight=1.0, pid="niah x")], NIAH)
    assert gate.outcome == "could_not_check" and "averaged 1.00 of 4 streams" in gate.observed["niah x"]
    assert "NotJudged" in type(gate.could_not_check("local")).__name__


def test_a_gate_where_no_probe_was_right_idle_has_nothing_to_compare():
    gate = judge_gate([sample(answer(False, "1"), answer(False, "2"))], NIAH)
    assert gate.outcome == "could_not_check" and "nothing to compare" in gate.observed


def test_a_gate_holds_when_every_probe_was_held_and_kept_and_counts_changed_texts():
    gate = judge_gate([sample(answer(), answer(text="It is 4417702.")), sample(answer(), answer(), pid="n2")], NIAH)
    assert gate.outcome == "held" and gate.is_ok
    assert "2 kept, 0 worse" in gate.observed and "text changed under load in 1 of 2" in gate.observed


def test_a_kind_with_no_probe_is_not_sampled():
    assert judge_gate([sample(answer(), answer())], VALIDITY).outcome == "not_sampled"


def test_mean_in_flight_is_the_time_weighted_count_over_the_window():
    intervals = [Interval(0.0, 10.0), Interval(0.0, 5.0), Interval(5.0, None), Interval(20.0, 30.0)]
    assert mean_in_flight(intervals, Window(2.0, 8.0), now=9.0) == pytest.approx(2.0)
    assert mean_in_flight(intervals, Window(8.0, 12.0), now=9.0) == pytest.approx((2 + 1) / 4)  # open one ends now
    assert mean_in_flight(intervals, Window(3.0, 3.0), now=9.0) == 0.0


def test_a_text_changed_under_load_and_again_idle_is_counted_as_not_the_loads():
    first, other = answer(), answer(text="It is 4417702.")
    moved = sample(first, other, other)  # the idle answer after the load is the loaded one's text
    assert moved.is_text_changed and moved.is_text_unstable_idle
    assert not sample(first, other).is_text_unstable_idle
    gate = judge_gate([moved], NIAH)
    assert gate.outcome == "held" and "(1 of them changed idle again too)" in gate.observed
    assert judge_probe(moved, NIAH, "text").status == "unstable"
