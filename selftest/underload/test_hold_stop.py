"""Stopping the load leaves no failed future behind: the streams the hold cuts are the client's own doing, so a clean
run prints no "Future exception was never retrieved" (REAL: the lent H200's correctness run, 2026-12-01, printed 336
such lines, `WireError('connection closed by the server mid-stream')`; selftest/data/perf/
REAL-h200-correctness-under-load-2026-12-01/README.md). Against the SYNTHESIZED loopback stub (stub.py)."""

from __future__ import annotations

import asyncio
import gc

from llmval.load import WireClient, completion_payload
from llmval.load._runner import sender
from llmval.underload.hold import LoadHold

from .stub import StubState, stub_server


def _hold_then_stop(base_url: str, concurrency: int) -> tuple[list[dict], LoadHold]:
    """Hold `concurrency` wire streams on the stub, stop the hold mid-stream, close the client as run.py does;
    returns what reached the loop's exception handler (after a GC) and the hold."""
    reported: list[dict] = []

    async def go() -> LoadHold:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reported.append(context))
        wire = WireClient(base_url, timeout_s=30)
        payload = completion_payload(model="stub", prompt="w " * 8, output_len=10_000, temperature=0.0,
                                     ignore_eos=True)
        hold = LoadHold(sender(wire), lambda: payload, concurrency)
        await hold.start()
        await hold.wait_full(timeout_s=10, settle_s=0.2)
        await hold.stop()
        await wire.aclose()
        await asyncio.sleep(0.2)  # connection_lost of every closed connection runs
        gc.collect()
        await asyncio.sleep(0)
        return hold

    hold = asyncio.run(go())
    gc.collect()
    return reported, hold


def test_stopping_the_hold_mid_stream_leaves_no_unretrieved_future():
    with stub_server(StubState(chunk_s=0.02)) as base_url:
        reported, hold = _hold_then_stop(base_url, concurrency=4)
    assert len(hold.intervals) >= 4 and all(i.end is not None for i in hold.intervals)
    assert [c.get("message") for c in reported] == [], "the cut streams' futures were left for the GC to report"
