"""Perf values that cannot end (issue 23.2): inventory values that would hang a perf run are refused at load, and
a streamed load request ends at the request's time, however slowly the server trickles.

`request_rates = [1e-300]` waited ~1e300 s for its second arrival and `rate_requests = 10**9` never ended; both
passed `check-inventory` before.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
import tomllib

import pytest
import tomli_w

from llmval.__main__ import main as llmval_main
from selftest.hostile.server import HostileServer, sse
from selftest.strategies import ROOT


@pytest.mark.parametrize(("values", "named"), [
    ({"request_rates": [1e-300]}, "request_rates[0]"),
    ({"request_rates": [1.0, 0.001]}, "request_rates[1]"),
    ({"request_rates": [1.0], "rate_requests": 1_000_000_000}, "rate_requests"),
    ({"request_rates": [0.02], "rate_requests": 100_000}, "more than a day"),
    ({"request_rates": [1.0], "rate_max_concurrency": 1_000_000_000}, "rate_max_concurrency"),
    ({"request_rates": [1.0] * 65}, "request_rates"),
], ids=["rate-1e-300", "rate-0.001", "rate_requests-1e9", "a-sweep-of-58-days", "max-concurrency-1e9",
        "65-rates"])
def test_a_perf_sweep_that_cannot_end_is_refused_at_load(tmp_path, values, named):
    document = tomllib.loads((ROOT / "inventories" / "local.toml").read_text())
    document["perf"][0].update(values)
    path = tmp_path / "inventory.toml"
    path.write_text(tomli_w.dumps(document))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = llmval_main(["check-inventory", str(path)])
    assert code == 4 and named in out.getvalue() and "perf[0" in out.getvalue(), out.getvalue()
    assert "Traceback" not in out.getvalue()


@pytest.mark.slow
def test_a_streamed_load_request_ends_at_the_request_timeout_however_slowly_it_trickles():
    from llmval.io.http import make_async_client
    from llmval.load._request import stream_completion

    chunk = {"choices": [{"index": 0, "text": "x", "finish_reason": None}]}
    with HostileServer({"/v1/completions": sse([chunk] * 100, every_s=0.5)}) as server:
        async def one():
            async with make_async_client(server.base_url, timeout_s=2, asyncio_native=True) as client:
                return await stream_completion(client, {"model": "smollm2", "prompt": "hi", "stream": True})

        started = time.monotonic()
        record = asyncio.run(one())
        elapsed = time.monotonic() - started
    assert not record.success and "within 2 s" in record.error and "hung or trickling" in record.error, record
    assert elapsed < 4, elapsed
