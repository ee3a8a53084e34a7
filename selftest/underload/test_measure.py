"""Correctness under load end to end against a SYNTHESIZED vLLM-shaped loopback server (selftest/underload/stub.py):
the three passes, the held load, and each gate's verdict when the server answers right, turns wrong only while it
is loaded, or refuses the load."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from llmval.core.errors import NotReady
from llmval.inventory import EndpointSpec, PerfSpec
from llmval.io.http import endpoint_client, make_async_client
from llmval.load import WireClient
from llmval.underload import CorrectnessRun, measure, measure_async

from .stub import CATEGORIES, StubState, stub_server, stub_state


def _endpoint(base_url: str) -> EndpointSpec:
    return EndpointSpec(name="stub", platform="local", base_url=base_url, engine="vllm", model="stub",
                        max_model_len=8192, request_timeout_s=30,
                        tool_calls={"variants": ["strict"], "tool_choice": "required"})


def _perf(**correctness) -> PerfSpec:
    return PerfSpec(endpoint="stub", input_len=16, output_len=30, throughput_concurrency=3,
                    correctness={"niah_lengths": [512], "niah_depths": [0.0, 1.0], "tool_categories": CATEGORIES,
                                 "hold_timeout_s": 10, **correctness})


def _measure(state: StubState, tmp_path, **correctness) -> CorrectnessRun:
    with stub_server(state) as base_url:
        return measure(_endpoint(base_url), _perf(**correctness), lock_path=tmp_path / "lock",
                       reports_dir=tmp_path / "reports")


@pytest.mark.slow
def test_a_server_right_under_load_holds_every_gate_and_asks_each_probe_three_times(tmp_path):
    state = stub_state()
    run = _measure(state, tmp_path)
    assert [s.probe_id for s in run.samples] == ["niah stub-512-d0", "niah stub-512-d100", "toolcall strict/flat-0",
                                                 "toolcall strict/enum-0", "toolcall strict/bigint-0"]
    assert {g.check: g.outcome for g in run.gates()} == {"perf.correctness.niah": "held",
                                                         "perf.correctness.toolcalls.validity": "held",
                                                         "perf.correctness.toolcalls.values": "held"}
    assert all(s.is_held and s.in_flight >= 2.7 for s in run.samples)  # C=3 streams in flight during every ask
    assert state.chats_under_load == len(run.samples)  # each probe asked once while streams were in flight
    assert all(s.idle_after is not None and s.idle_after.text == s.idle.text for s in run.samples)
    assert run.summary()["text_changed"] == 0 and run.load_requests >= 3 and run.load_failed == 0
    report = json.loads(run.report.read_text())
    assert report["summary"]["outcomes"]["perf.correctness.niah"] == "held"
    assert report["samples"][0]["idle"]["judged"].startswith("found ")


@pytest.mark.slow
def test_a_needle_lost_only_under_load_breaks_the_niah_gate_naming_the_cell_and_both_answers(tmp_path):
    run = _measure(stub_state(fault="niah"), tmp_path)
    gate = run.gate("perf.correctness.niah")
    assert gate.outcome == "broken"
    assert set(gate.observed) == {"niah stub-512-d0", "niah stub-512-d100"}
    detail = gate.observed["niah stub-512-d0"]
    assert detail.startswith("idle: found ") and "| under load (C=3): missed: answered 'The special magic" in detail
    assert run.gate("perf.correctness.toolcalls.values").outcome == "held"  # only the needle answers turned


@pytest.mark.slow
def test_changed_argument_values_under_load_break_values_but_not_validity(tmp_path):
    run = _measure(stub_state(fault="values"), tmp_path)
    assert run.gate("perf.correctness.toolcalls.validity").outcome == "held"
    values = run.gate("perf.correctness.toolcalls.values")
    assert values.outcome == "broken" and len(values.observed) == 3
    assert "idle: valid, exact: set_mode(" in values.observed["toolcall strict/enum-0"]
    assert "under load (C=3): valid, other values: set_mode(" in values.observed["toolcall strict/enum-0"]


@pytest.mark.slow
def test_arguments_that_are_not_objects_under_load_break_validity(tmp_path):
    run = _measure(stub_state(fault="invalid"), tmp_path)
    validity = run.gate("perf.correctness.toolcalls.validity")
    assert validity.outcome == "broken"
    assert all("under load (C=3): invalid (not_object)" in d for d in validity.observed.values())


@pytest.mark.slow
def test_calls_without_id_and_type_under_load_break_validity_naming_the_envelope(tmp_path):
    """Issue 42.6: the same arguments, but calls an agent framework cannot answer (no `id`, no `type`)."""
    run = _measure(stub_state(fault="envelope"), tmp_path)
    validity = run.gate("perf.correctness.toolcalls.validity")
    assert validity.outcome == "broken" and len(validity.observed) == 3
    assert all("under load (C=3): invalid (envelope)" in d for d in validity.observed.values()), validity.observed


@pytest.mark.slow
def test_text_mode_breaks_on_any_other_text_even_when_the_judged_answer_is_kept(tmp_path):
    """A needle answer that differs only in words is kept when judged, broken when the text must be equal."""
    state = stub_state()
    with stub_server(state) as base_url:
        endpoint, perf = _endpoint(base_url), _perf(compare="text", tool_categories=[])

        async def go():
            with endpoint_client(endpoint) as client:
                async with make_async_client(base_url, timeout_s=30) as async_client:
                    return await measure_async(endpoint, perf, client=client, async_client=async_client)

        import selftest.underload.stub as stub

        original = stub._niah_answer
        stub._niah_answer = lambda content, corrupt: original(content, False) + (" Sure." if state.streams else "")
        try:
            run = asyncio.run(go())
        finally:
            stub._niah_answer = original
    gate = run.gate("perf.correctness.niah")
    assert gate.outcome == "broken" and all(j.status == "text_changed" for j in gate.judgements)
    assert "Sure." in next(iter(gate.observed.values()))
    assert run.gate("perf.correctness.toolcalls.validity").outcome == "not_sampled"


@pytest.mark.slow
def test_a_load_the_server_refuses_is_never_held_and_says_why(tmp_path):
    with pytest.raises(NotReady, match=r"did not reach 3 streams in flight within 2 s .*HTTP 503"):
        _measure(stub_state(refuse_load=True), tmp_path, hold_timeout_s=2)


@pytest.mark.slow
def test_the_wire_client_streams_the_load_too(tmp_path):
    """The fixture's path: load streams over llmval.io.wire (chunked SSE, keep-alive), probes over httpx."""
    state = stub_state()
    with stub_server(state) as base_url:
        endpoint, perf = _endpoint(base_url), _perf(tool_categories=[], repeat_idle=False)

        async def go():
            with endpoint_client(endpoint) as client:
                async with httpx.AsyncClient(base_url=base_url) as async_client, WireClient(base_url) as wire:
                    return await measure_async(endpoint, perf, client=client, async_client=async_client,
                                               streamer=wire)

        run = asyncio.run(go())
    assert run.gate("perf.correctness.niah").outcome == "held"
    assert all(s.idle_after is None and s.is_held for s in run.samples)
