"""The perf session and the client host's load: every run's report carries the host's load over its window; a
busy window is measured once more and, busy again, is ClientHostBusy (could-not-check, with the load and the fix),
never a run the gates judge. SYNTHESIZED server (httpx.MockTransport) and scripted host windows; the /proc reading
itself is tested in test_hostload.py."""

from __future__ import annotations

import json

import pytest

from llmval.core.errors import LlmvalError
from llmval.core.verdict import Cause, could_not_check
from llmval.load import ClientHostBusy

from .fakes import FakeClock, FakeServer
from .sessions import SPEC, ScriptedProbe, session


def test_every_report_carries_the_client_hosts_load_over_its_window(tmp_path):
    measured = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([0.05]))[0].get(SPEC, 1)
    host = json.loads(measured.report.read_text())["client_host"]
    assert host["other_cores"] == 0.05 and host["engine_cores"] == 1.8 and host["busy"] is None
    assert host["load_avg"][0] == pytest.approx(1.1) and host["limits"]["other_share_max"] == 0.25
    assert measured.host.other_cores == 0.05


def test_a_busy_window_is_measured_again_and_the_quiet_one_counts(tmp_path):
    server, probe = FakeServer(FakeClock()), ScriptedProbe([1.4, 0.1])
    perf, said = session(tmp_path, server, probe)
    measured = perf.get(SPEC, 1)
    assert measured.host.other_cores == 0.1 and len(probe.windows) == 2
    assert len(server.completions) == 2 * (SPEC.warmups(1) + SPEC.num_requests(1))
    assert any("client host busy during attempt 1" in line and "measuring again" in line for line in said)


def test_busy_in_every_attempt_is_could_not_check_naming_the_load_and_the_fix(tmp_path):
    server = FakeServer(FakeClock())
    perf, _ = session(tmp_path, server, ScriptedProbe([1.4]))
    with pytest.raises(ClientHostBusy) as raised:
        perf.get(SPEC, 1)
    error = raised.value
    assert isinstance(error, LlmvalError)
    assert str(error).startswith("measurement invalid: client host busy, load 3.80 on 2 CPUs, during [local-vllm] "
                                 "the C=1 measurement in each of 2 attempts: other processes kept 1.40 of 2 CPUs busy")
    assert "fix: run perf when this host is otherwise idle" in str(error)
    verdict = could_not_check("local-vllm", "perf.decode.tok_s_c1", error)
    assert verdict.cause == Cause.COULD_NOT_CHECK and verdict.error == "ClientHostBusy"
    assert verdict.reason == "measurement invalid: client host busy" and "otherwise idle" in verdict.hint
    report = json.loads((tmp_path / "reports" / "perf" / "local-vllm-c1.json").read_text())
    assert "other processes kept 1.40" in report["client_host"]["busy"]  # the invalid run stays as evidence
    sent = len(server.completions)
    with pytest.raises(ClientHostBusy):
        perf.get(SPEC, 1)
    assert len(server.completions) == sent  # not measured a third time in the same session


def test_allow_busy_host_judges_the_run_and_says_it_was_busy(tmp_path):
    perf, said = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([1.4]), judge_host_load=False)
    measured = perf.get(SPEC, 1)
    assert measured.host.is_busy
    assert any("judged anyway (--perf-allow-busy-host)" in line for line in said)
    # kept for every verdict of the session to say (fixtures/perf.py's note on each observed value, issue 43.7)
    assert perf.judged_busy and "other processes kept 1.40" in perf.judged_busy[0]


def test_a_sweep_rate_busy_twice_is_client_host_busy(tmp_path):
    fast = SPEC.model_copy(update={"request_rates": [50.0, 100.0]})  # arrivals in ms, not the inventory's 32 s
    perf, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([0.0, 1.2, 1.3]))
    with pytest.raises(ClientHostBusy, match=r"during \[local-vllm\] the sweep at 100 req/s in each of 2 attempts"):
        perf.sweep(fast)
