"""A hostile OpenAI-compatible server on 127.0.0.1 for the self-tests of issue 23: in-process, one thread per
connection, answering like vLLM by default and, path by path, however a test asks (trickling bytes, huge or
malformed bodies, echoed secrets, slow event streams).

    with HostileServer({"/health": trickle(b"OK" * 100, every_s=1.0)}) as server:
        run the contract against server.base_url

A route is `handler(request) -> None` writing to `request` (a BaseHTTPRequestHandler); `answer(...)` builds the
common ones. `server.stop` is set when the server closes: trickling routes end then, so no thread outlives it.
"""

from __future__ import annotations

import functools
import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "smollm2"
Route = Callable[[BaseHTTPRequestHandler], None]


def answer(body: bytes | str | object, status: int = 200, content_type: str = "application/json",
           headers: dict[str, str] | None = None) -> Route:
    """A route answering `body` at once (bytes and str as they are, anything else as JSON), with `headers`."""
    if isinstance(body, str):
        data = body.encode("utf-8", "surrogateescape")
    elif isinstance(body, bytes):
        data = body
    else:
        data = json.dumps(body).encode()

    def route(request: BaseHTTPRequestHandler) -> None:
        request.send_response(status)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            request.send_header(name, value)
        request.end_headers()
        request.wfile.write(data)

    return route


def trickle(data: bytes, every_s: float = 1.0, chunk: int = 1, content_type: str = "application/json") -> Route:
    """A route that sends its headers at once, then `chunk` bytes of `data` every `every_s` seconds."""

    def route(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.flush()
        for start in range(0, len(data), chunk):
            if request.server.stop.wait(every_s):  # type: ignore[attr-defined]
                return
            request.wfile.write(data[start:start + chunk])
            request.wfile.flush()

    return route


def sse(events: list[object], every_s: float = 0.0, done: bool = True) -> Route:
    """A route streaming `events` as server-sent events (`data: <json>`), one every `every_s` seconds."""

    def route(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        request.end_headers()
        lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
        for line in lines + (["data: [DONE]\n\n"] if done else []):
            if every_s and request.server.stop.wait(every_s):  # type: ignore[attr-defined]
                return
            request.wfile.write(line.encode())
            request.wfile.flush()
        request.close_connection = True

    return route


def chat_completion(content: str = "OK", tokens: int = 2) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}}


def _chat(request: BaseHTTPRequestHandler) -> None:
    length = int(request.headers.get("Content-Length") or 0)
    body = json.loads(request.rfile.read(length) or b"{}")
    if body.get("stream"):
        chunks = [{"id": "c", "object": "chat.completion.chunk", "model": MODEL,
                   "choices": [{"index": 0, "delta": {"role": "assistant", "content": word}, "finish_reason": None}]}
                  for word in ("O", "K")]
        chunks.append({"id": "c", "object": "chat.completion.chunk", "model": MODEL, "choices": [],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
        sse(chunks)(request)
    else:
        answer(chat_completion())(request)


VLLM_ROUTES: dict[str, Route] = {
    "/health": answer(b"", content_type="text/plain"),
    "/version": answer({"version": "0.32.0"}),
    "/v1/models": answer({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "vllm", "root": MODEL,
                                                      "max_model_len": 8192}]}),
    "/v1/chat/completions": _chat,
}
"""How vLLM answers (shapes as vLLM 0.32 answers them on the local engine; values invented, SYNTHESIZED)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _route(self) -> None:
        route = self.server.routes.get(self.path.split("?")[0])  # type: ignore[attr-defined]
        self.server.seen.append((self.command, self.path, dict(self.headers)))  # type: ignore[attr-defined]
        if route is None:
            answer({"detail": "Not Found"}, status=404)(self)
            return
        try:
            route(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = _route

    def log_message(self, *args) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that hung up on a hostile answer (a broken pipe) is the point, not news


class HostileServer:
    """The server, as a context manager: `base_url`, `seen` (method, path, headers of each request)."""

    def __init__(self, routes: dict[str, Route] | None = None, *, base: dict[str, Route] | None = None):
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.routes = {**(VLLM_ROUTES if base is None else base), **(routes or {})}  # type: ignore
        self._server.seen = []  # type: ignore[attr-defined]
        self._server.stop = threading.Event()  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def seen(self) -> list:
        return self._server.seen  # type: ignore[attr-defined]

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.stop.set()  # type: ignore[attr-defined]
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        time.sleep(0)


def forever(every_s: float = 0.5, content_type: str = "text/event-stream") -> Route:
    """A route that streams one SSE event every `every_s` seconds and never ends (until the server stops)."""
    event = b'data: {"choices":[{"index":0,"text":"x","finish_reason":null}]}\n\n'

    def route(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", content_type)
        request.end_headers()
        while not request.server.stop.wait(every_s):  # type: ignore[attr-defined]
            request.wfile.write(event)
            request.wfile.flush()
        request.close_connection = True

    return route


def endless(chunk: bytes = b"x" * 2**20, content_type: str = "text/event-stream", encoding: str = "") -> Route:
    """A route that writes `chunk` after `chunk` as fast as the client reads, with no length and no end (a body of
    1.5 GB, or of any size), optionally saying it is `encoding`-encoded."""

    def route(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", content_type)
        if encoding:
            request.send_header("Content-Encoding", encoding)
        request.end_headers()
        while not request.server.stop.is_set():
            request.wfile.write(chunk)
        request.close_connection = True

    return route


@functools.lru_cache(maxsize=4)
def gzipped_zeros(inflated: int, level: int = 1) -> bytes:
    """gzip of `inflated` zero bytes: 256 MiB is 1.1 MiB at level 1 (0.7 s to build), 1 GiB 1 MiB at level 9 (8 s)."""
    packer = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(2**20)
    return b"".join(packer.compress(block) for _ in range(inflated // len(block))) + packer.flush()


def gzip_bomb(inflated: int = 256 * 2**20, status: int = 200, content_type: str = "text/event-stream",
              level: int = 1) -> Route:
    """A route answering a gzip body that inflates to `inflated` bytes of zeros (Content-Length set: the socket
    bytes are far under any cap)."""
    return answer(gzipped_zeros(inflated, level), status=status, content_type=content_type,
                  headers={"Content-Encoding": "gzip"})


def gzipped(route_body: bytes | str | object, status: int = 200, content_type: str = "application/json") -> Route:
    """A route answering `route_body` gzip-encoded (as a server behind a compressing proxy does)."""
    data = route_body.encode() if isinstance(route_body, str) else route_body if isinstance(route_body, bytes) \
        else json.dumps(route_body).encode()
    return answer(gzip.compress(data), status=status, content_type=content_type, headers={"Content-Encoding": "gzip"})
