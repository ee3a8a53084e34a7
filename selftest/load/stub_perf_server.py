"""A SYNTHESIZED vLLM-shaped server on loopback for perf-plugin self-tests without the engine: the MockTransport
`FakeServer` of fakes.py (one token per word, /tokenize, /detokenize, vLLM-named /metrics, streamed
/v1/completions) behind a real ThreadingHTTPServer, plus /v1/models and /version for the server identity.
Not an engine: its timings mean nothing, only the plugin's wiring is under test."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from .fakes import FakeClock, FakeServer


@contextmanager
def stub_perf_server(model: str, **lies) -> Iterator[str]:
    """Serve on a free loopback port; yields the base URL. `lies`: FakeServer's (`usage_factor=10`)."""
    fake = FakeServer(FakeClock(), **lies)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            return

        def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/v1/models":
                return self._send(200, json.dumps({"data": [{"id": model, "owned_by": "vllm",
                                                             "max_model_len": 8192}]}).encode())
            if path == "/version":
                return self._send(200, b'{"version": "stub"}')
            if path == "/metrics":
                with lock:
                    response = fake.handle(httpx.Request("GET", f"http://stub{path}"))
                return self._send(200, response.content, "text/plain")
            return self._send(404, b"{}")

        def do_POST(self) -> None:
            content = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                response = fake.handle(httpx.Request("POST", f"http://stub{self.path}", content=content))
            if self.path == "/v1/completions" and response.status_code == 200:
                async def collect() -> bytes:
                    return b"".join([piece async for piece in response.stream])
                return self._send(200, asyncio.run(collect()), "text/event-stream")
            response.read()
            return self._send(response.status_code, response.content)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
