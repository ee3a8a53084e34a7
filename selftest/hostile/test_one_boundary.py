"""One bounded, decoded, redacted boundary for every byte that comes in (issue 32.2, 33.2).

The load generator had two HTTP stacks of its own (`load/_wire.py`, `load/_h11transport.py`) without the io
boundary's whole-request deadline and body cap: a perf stream sending an event every 0.5 s ran past 120 s with
request_timeout_s = 10, a 1.5 GB /metrics raised MemoryError at 3.1 GB RSS, and httpx inflated a gzip body after
the cap had counted its socket bytes (1 MiB -> 1 GiB: 3.2 GB RSS, still running at 120 s). Now both stacks live
in `llmval.io` and every client of the suite is asked the same hostile answers here, each in a process of its own
(`selftest.hostile.clients`), and must end inside its time, under the cap, naming why.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from selftest.hostile.clients import CLIENTS
from selftest.hostile.server import HostileServer, endless, forever, gzip_bomb, trickle
from selftest.strategies import ROOT

EVENT = b'data: {"choices":[{"index":0,"text":"x","finish_reason":null}]}\n\n'
HOSTILE = {
    "/forever": forever(every_s=0.3),  # an SSE event every 0.3 s, never the end
    "/trickle": trickle(b"x" * 1000, every_s=0.5, content_type="text/event-stream"),
    "/endless": endless(EVENT * (2**20 // len(EVENT))),  # 1 MiB of events after 1 MiB, no end
    "/gzip-bomb": gzip_bomb(256 * 2**20),  # 1.1 MiB on the wire, 256 MiB inflated
}
EXPECTED = {
    "/forever": ("within 2 s", "hung or trickling"),
    "/trickle": ("within 2 s", "hung or trickling"),
    "/endless": ("larger than 64 MiB", "refused to read more"),
    "/gzip-bomb": ("refused to read more",),
}


def _ask(client: str, url: str, timeout_s: float) -> dict:
    done = subprocess.run([sys.executable, "-m", "selftest.hostile.clients", client, url, str(timeout_s)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hostile():
    with HostileServer(HOSTILE) as server:
        yield server


@pytest.mark.subprocess
@pytest.mark.parametrize("path", sorted(HOSTILE))
@pytest.mark.parametrize("client", CLIENTS)
def test_every_client_ends_a_hostile_answer_in_its_time_under_the_cap_saying_why(hostile, client, path):
    said = _ask(client, hostile.base_url + path, 2 if path in ("/forever", "/trickle") else 30)
    assert all(words in said["error"] for words in EXPECTED[path]), said
    assert "UNEXPECTED" not in said["error"], said
    assert said["elapsed_s"] < (4 if path in ("/forever", "/trickle") else 25), said
    assert said["peak_rss_mb"] < 400, said  # the cap is 64 MiB; each process starts near 60 MB


NETWORK_CALLS = {
    ("socket", "create_connection"), ("socket", "socket"), ("asyncio", "open_connection"),
    ("httpx", "get"), ("httpx", "post"), ("httpx", "put"), ("httpx", "request"), ("httpx", "stream"),
    ("httpx", "Client"), ("httpx", "AsyncClient"), ("httpx", "HTTPTransport"), ("httpx", "AsyncHTTPTransport"),
    ("urllib.request", "urlopen"), ("http.client", "HTTPConnection"),
}


def test_no_module_outside_io_opens_a_connection_or_builds_a_client():
    """Every byte to or from an endpoint passes `llmval.io` (`make_client`, `make_async_client`, `WireClient`,
    `port_open`): no module elsewhere in src/ or fixtures/ calls a socket, an asyncio connection or an httpx client
    or transport of its own, so none can read without the deadline, the cap and the decoding. (Servers the suite
    runs itself, the calibration source, are not doors in: they answer the suite's own client.)"""
    offenders = []
    for folder in ("src/llmval", "fixtures", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.parent.name == "io" and path.parent.parent.name == "llmval":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                name = ast.unparse(node.func)
                owner, _, attr = name.rpartition(".")
                if (owner, attr) in NETWORK_CALLS or attr in ("create_connection", "open_connection"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}(...)")
    assert offenders == []
