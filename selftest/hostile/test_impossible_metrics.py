"""Impossible metrics are never held (issue 42.4): a server whose /metrics claims what no engine can (an acceptance
length of 9.0 with 2 draft tokens a step, a counter that drops) gets could-not-check naming the figure and its
values, not GREEN; the same server with honest counters holds.

Each test runs the serving contract (in a subprocess) against a HostileServer answering like vLLM, its /metrics
SYNTHESIZED in vLLM 0.24.0's names (the REAL H200 scrape's) with the counters each test gives.
"""

from __future__ import annotations

import json
import threading

import pytest

from selftest.hostile.harness import run_contract
from selftest.hostile.server import HostileServer, answer

SPECULATIVE = {"expect": {"speculative": {"algorithm": "ngram", "num_steps": 2, "accept_length_min": 1.0}}}
CHECK = "serving.speculative.accept_length"


def scrapes(*counters: tuple[float, float]):
    """A /metrics route answering vLLM's spec-decode counters (drafts, accepted tokens) from `counters` in turn,
    the last one from then on."""
    asked = []
    lock = threading.Lock()

    def route(request) -> None:
        with lock:
            drafts, accepted = counters[min(len(asked), len(counters) - 1)]
            asked.append(1)
        text = (f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="smollm2"}} {drafts}\n'
                f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="smollm2"}} {accepted}\n'
                f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="smollm2"}} {drafts * 8}\n')
        answer(text, content_type="text/plain; version=0.0.4")(request)

    return route


def _verdict(run) -> dict:
    verdicts = [v for t in json.loads(run.files["reports/results.json"])["tests"] for v in t.get("verdicts", [])]
    return next(v for v in verdicts if v["check"] == CHECK)


def _said(verdict: dict) -> str:
    return " ".join(str(verdict[k]) for k in ("observed", "reason", "error"))


@pytest.mark.subprocess
def test_an_acceptance_length_above_one_plus_the_draft_tokens_is_could_not_check_naming_it(tmp_path):
    """1 + 80 accepted / 10 drafts = 9.0 tokens a step, with num_steps = 2 (at most 3): the lead's 9.0."""
    with HostileServer({"/metrics": scrapes((0, 0), (10, 80))}) as server:
        run = run_contract(server, tmp_path, endpoint=SPECULATIVE, args=("-k", "acceptance_length"))
    verdict = _verdict(run)
    assert verdict["cause"] == "could-not-check", verdict
    assert "speculative acceptance length 9 " in _said(verdict) and "range 1..3" in _said(verdict), verdict
    assert run.rc != 0 and "Traceback" not in run.terminal, run.terminal[-3000:]


@pytest.mark.subprocess
def test_a_counter_that_drops_between_the_scrapes_is_could_not_check(tmp_path):
    with HostileServer({"/metrics": scrapes((500, 600), (10, 12))}) as server:
        run = run_contract(server, tmp_path, endpoint=SPECULATIVE, args=("-k", "acceptance_length"))
    verdict = _verdict(run)
    assert verdict["cause"] == "could-not-check", verdict
    assert "counter growth between two scrapes -490 (vllm:spec_decode_num_drafts over the window)" in \
        _said(verdict), verdict


@pytest.mark.subprocess
def test_honest_counters_hold(tmp_path):
    """The control: 1 + 12 / 10 = 2.2 tokens a step with 2 draft tokens."""
    with HostileServer({"/metrics": scrapes((0, 0), (10, 12))}) as server:
        run = run_contract(server, tmp_path, endpoint=SPECULATIVE, args=("-k", "acceptance_length"))
    verdict = _verdict(run)
    assert verdict["cause"] == "held" and verdict["observed"] == "2.2", verdict
