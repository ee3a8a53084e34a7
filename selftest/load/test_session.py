"""The perf session's measurement policy against a SYNTHESIZED server (httpx.MockTransport): measured once
per section and concurrency (failures included), one retry when other traffic was seen, then OtherLoad;
a bounded wait for an idle engine; the run's JSON report names its server identity."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from llmval.core.errors import NotReady
from llmval.engines import VllmAdapter
from llmval.inventory import load_inventory
from llmval.load import BaselineStore, OtherLoad, PerfSession, wait_idle
from selftest.strategies import ROOT

from .fakes import FakeClock, FakeServer

INVENTORY = load_inventory(ROOT / "inventories" / "local.toml")
SPEC = INVENTORY.perf[0].model_copy(update={"machine": None})  # absolute: no calibration against a fake server


def _session(tmp_path, server: FakeServer) -> tuple[PerfSession, list[str]]:
    said: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path != "/metrics":
            return httpx.Response(404)  # /v1/models, /version: the identity keeps what answers
        return server.handle(request)

    def connect(endpoint, max_connections):
        return httpx.AsyncClient(base_url=str(endpoint.base_url), transport=httpx.MockTransport(handle))

    session = PerfSession(INVENTORY, reports_dir=tmp_path / "reports", lock_path=tmp_path / "perf.lock",
                          baselines=BaselineStore(tmp_path / "baselines"), progress=said.append, connect=connect)
    return session, said


def test_a_run_is_measured_once_and_reported_with_its_server_identity(tmp_path):
    server = FakeServer(FakeClock())
    session, said = _session(tmp_path, server)
    measured = session.get(SPEC, 1)
    sent = len(server.completions)
    assert session.get(SPEC, 1) is measured and len(server.completions) == sent
    assert sent == SPEC.warmups(1) + SPEC.num_requests(1)
    report = json.loads(measured.report.read_text())
    assert report["server_key"] == measured.server_key and report["identity"]["engine"] == "vllm"
    assert report["foreign_tokens"] == 0 and any("decode" in line for line in said)


def test_other_traffic_in_every_attempt_is_other_load_and_is_not_measured_again(tmp_path):
    server = FakeServer(FakeClock(), foreign_tokens=50)
    session, said = _session(tmp_path, server)
    with pytest.raises(OtherLoad, match="50 tokens for other clients during each of 2 measurements at C=1"):
        session.get(SPEC, 1)
    sent = len(server.completions)
    assert sent == 2 * (SPEC.warmups(1) + SPEC.num_requests(1))
    assert any("measuring again" in line for line in said) and any("giving up" in line for line in said)
    with pytest.raises(OtherLoad):
        session.get(SPEC, 1)
    assert len(server.completions) == sent  # a failed measurement is not repeated in the same session


def _metrics_server(running: list[int]):
    def handle(request: httpx.Request) -> httpx.Response:
        now = running.pop(0) if len(running) > 1 else running[0]
        return httpx.Response(200, text=f"vllm:num_requests_running {now}\nvllm:num_requests_waiting 1\n"
                                        if now else "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n")
    return handle


def _wait(handler, **kwargs) -> None:
    async def go() -> None:
        async with httpx.AsyncClient(base_url="http://fake", transport=httpx.MockTransport(handler)) as client:
            await wait_idle(client, "fake", VllmAdapter, **kwargs)
    asyncio.run(go())


def test_idle_wait_returns_once_nothing_runs_or_waits():
    polls = [2, 1, 0]
    _wait(_metrics_server(polls), poll_s=0)
    assert polls == [0]


def test_idle_wait_is_bounded_and_names_what_still_runs():
    with pytest.raises(NotReady, match="still had 3 running and 1 waiting requests after 0 s"):
        _wait(_metrics_server([3]), timeout_s=0, poll_s=0)
