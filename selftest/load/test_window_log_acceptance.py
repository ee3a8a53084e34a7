"""A perf window's speculative acceptance from the engine log where /metrics has none (issue 44.6), as the serving
check reads it: the lines the engine logged between a read before and a read after the window
(`llmval.engines.logs.lines_since`), through the adapter's `window_log_acceptance`.

SYNTHESIZED log lines in the engines' own formats: vLLM's `SpecDecoding metrics:` record (as in
selftest/engines/test_issue44_logs.py and `parse_spec_decoding`'s doctest) and SGLang's `Decode batch. ... accept len`
line; their numbers are chosen so that the weighted window length is known (2 draft tokens a step).
"""

from __future__ import annotations

import json
import threading
import tomllib

import pytest
import tomli_w

from llmval.engines import SglangAdapter, VllmAdapter
from llmval.engines.logs import lines_since
from llmval.inventory import SpeculativeSpec
from llmval.load import window_deltas, with_log_acceptance
from selftest.strategies import ROOT

from .fakes import FakeClock, FakeServer
from .perf_runs import run_perf
from .sessions import INVENTORY, SPEC, ScriptedProbe, session
from .stub_perf_server import stub_perf_server
from .test_perf_plugin import ABSOLUTE_ON_THE_STUB

pytest_plugins = ["pytester"]


def _interval(second: int, accepted: int, drafted: int, mean: float) -> str:
    return (f"(APIServer pid=9) INFO 12-06 11:{second // 60 % 60:02d}:{second % 60:02d} [metrics.py:96] SpecDecoding "
            f"metrics: Mean acceptance "
            f"length: {mean:.2f}, Accepted throughput: 5.00 tokens/s, Drafted throughput: 10.00 tokens/s, Accepted: "
            f"{accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: 0.600, 0.400, Avg Draft "
            f"acceptance rate: 50.0%\n")


BEFORE = _interval(0, 10, 100, 1.20)  # logged before the window: not its traffic
WINDOW = _interval(10, 50, 100, 2.00) + _interval(20, 150, 200, 2.50)  # 2 draft tokens a step: 1 + 2 * 50/100 ...


def test_the_window_is_the_lines_logged_between_the_reads_weighted_by_drafted_tokens():
    found = VllmAdapter.window_log_acceptance(lines_since(BEFORE, BEFORE + WINDOW))
    assert found.length == pytest.approx(1 + 2 * 200 / 300) and found.rate == pytest.approx(200 / 300)
    assert found.source.startswith("engine log: the 2 `SpecDecoding metrics:` interval(s) logged during the window")
    assert "Mean acceptance length: 2.50" in found.quote
    assert VllmAdapter.window_log_acceptance(lines_since(BEFORE, BEFORE)).missing.startswith("no `SpecDecoding")


def test_sglang_window_is_the_mean_of_its_accept_len_lines():
    def line(second: int, length: float) -> str:
        return (f"[2026-12-06 21:55:{second:02d} TP0] Decode batch. #running-req: 1, #token: 1363, token usage: 0.01, "
                f"accept len: {length:.2f}, accept rate: 0.74, cuda graph: True, gen throughput (token/s): 203.54\n")

    before = line(0, 1.10)
    found = SglangAdapter.window_log_acceptance(lines_since(before, before + line(10, 2.40) + line(20, 3.00)))
    assert found.length == pytest.approx(2.7) and found.rate is None
    assert "the mean of the 2 `Decode batch` accept len line(s)" in found.source


def test_metrics_acceptance_is_kept_and_the_log_is_the_fallback_with_both_reasons_when_neither():
    none = window_deltas(None, None)
    assert with_log_acceptance(none, VllmAdapter, BEFORE, BEFORE + WINDOW).spec_acceptance_length == \
        pytest.approx(2 + 1 / 3)
    measured = none.__class__(None, None, 1.8, 0.4, spec_acceptance_note="/metrics: ...")
    assert with_log_acceptance(measured, VllmAdapter, BEFORE, BEFORE + WINDOW) is measured
    neither = with_log_acceptance(none, VllmAdapter, BEFORE, BEFORE)
    assert neither.spec_acceptance_length is None
    assert neither.spec_acceptance_note.startswith("no /metrics scrapes around the window; the engine log: no `Spec")
    undeclared = with_log_acceptance(none, VllmAdapter, None, None, "no engine log declared (`logs`)")
    assert undeclared.spec_acceptance_note.endswith("; the engine log: no engine log declared (`logs`)")


def test_a_perf_window_without_acceptance_counters_takes_the_engines_log(tmp_path):
    """The perf session reads the endpoint's log before and after the measured window (the fake server's /metrics
    has no spec-decode counters): the window's acceptance is the log's, its note says so and why /metrics had none."""
    endpoint = INVENTORY.endpoint(SPEC.endpoint)
    speculative = endpoint.expect.model_copy(update={"speculative": SpeculativeSpec(algorithm="ngram",
                                                                                     accept_length_min=1.5)})
    inventory = INVENTORY.model_copy(update={"endpoints": [
        e.model_copy(update={"expect": speculative}) if e.name == endpoint.name else e for e in INVENTORY.endpoints]})
    reads = iter([BEFORE, BEFORE + WINDOW])
    runs, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([0.0]),
                      log_reader=lambda spec: (lambda: next(reads)))
    runs.inventory = inventory
    window = runs.get(SPEC, 1).run.engine
    assert window.spec_acceptance_length == pytest.approx(2 + 1 / 3), window
    assert window.spec_acceptance_note.startswith("engine log: the 2 `SpecDecoding metrics:` interval(s)"), window
    assert "(/metrics: /metrics has no vllm:spec_decode_num_drafts" in window.spec_acceptance_note, window


@pytest.mark.subprocess
def test_the_perf_contract_judges_acceptance_from_the_log_of_a_vllm_without_acceptance_counters(pytester):
    """The real contract (tests/perf, `-k acceptance`) against the stub perf server, whose /metrics has no
    spec-decode counters, with local.toml's local-vllm declaring ngram speculation and a log file the engine (here a
    thread) appends a `SpecDecoding metrics:` interval to every 5 ms: the verdict measures the window's
    acceptance from the log and says where it came from (before: could-not-check, /metrics has none)."""
    log = pytester.path / "vllm.log"
    log.write_text("(APIServer pid=9) INFO 12-06 11:00:00 [api_utils.py:1] non-default args: {'model': '/m'}\n"
                   + BEFORE)
    data = tomllib.loads((ROOT / "inventories" / "local.toml").read_text())
    endpoint = next(e for e in data["endpoints"] if e["name"] == "local-vllm")
    endpoint["logs"] = f"file:{log}"
    endpoint.setdefault("expect", {})["speculative"] = {"algorithm": "ngram", "accept_length_min": 1.5,
                                                        "accept_length_max": 3.0}
    gate = data["perf"][0]
    gate.update(c1_requests=3, warmup_requests=1, output_len=8, input_len=16)
    for key in ABSOLUTE_ON_THE_STUB:
        gate.pop(key, None)
    stop = threading.Event()

    def engine_logs() -> None:
        second = 1
        while not stop.wait(0.005):  # the stub answers a window in tens of ms: a line every 50 ms missed some
            with open(log, "a") as out:
                # a time of its own for every line (it wrapped at 60 s once: a window longer than 3 s then logged
                # lines equal to ones the read before it held, and `lines_since` rightly took them for old ones)
                out.write(_interval(second, 50, 100, 2.00))
            second += 1

    writer = threading.Thread(target=engine_logs, daemon=True)
    writer.start()
    try:
        with stub_perf_server(endpoint["model"]) as base_url:
            endpoint["base_url"] = base_url
            inventory = pytester.path / "stub.toml"
            inventory.write_text(tomli_w.dumps(data))
            result = run_perf(pytester, "--inventory", str(inventory), "-p", "no:xdist", "-k", "acceptance",
                              "--perf-baseline-dir", str(pytester.path / "baselines"),
                              "--perf-lock", str(pytester.path / "perf.lock"), "--perf-allow-busy-host")
    finally:
        stop.set()
        writer.join()
    results = json.loads((pytester.path / "reports" / "results.json").read_text())
    [verdict] = [v for t in results["tests"] for v in t.get("verdicts", [])
                 if v["check"] == "perf.speculative.acceptance_length"]
    assert verdict["observed"] == "2.000" and verdict["cause"] == "held", (verdict, result.stdout.str()[-3000:])
    assert verdict["evidence"].startswith("engine log: the "), verdict
    assert "`SpecDecoding metrics:` interval(s) logged during the window" in verdict["evidence"], verdict
    assert "(/metrics: /metrics has no vllm:spec_decode_num_drafts" in verdict["evidence"], verdict
