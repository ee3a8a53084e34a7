"""The load generator's streaming client: HTTP/1.1 and SSE parsed in one asyncio Protocol, no per-event layers.

Behind the same contract as every other byte the suite reads (`llmval.io.bounded`): the request's timeout is the
time the whole exchange may take (a stream that sends an event every 0.5 s forever ends at it, `hung_words`), an
answer stops at `MAX_BODY_BYTES` on the wire and again after decoding, a compressed answer is inflated here under
that cap, and what an error answer said reaches the record redacted before it is cut.

At GPU event rates (~30k SSE chunks/s at C=256 on one H200 serving a small model) the httpx stack costs more
CPU per event than the event itself is worth: httpx's response stream, the transport's byte iterator, h11's
event machine and an SSE line decoder each run per chunk, and each layer is an `await` (measured with
`python -m llmval bench --ceiling`; numbers in README "Perf"). Here one `asyncio.Protocol` per connection
receives the bytes, decodes the chunked transfer encoding, splits SSE events with the suite's one SSE reader
(`llmval.io.sse.SseSplitter`), and hands every complete `data:` payload to a fold (`StreamFold`: the load's
timing, vLLM's definitions, `llmval.load`).
Each event is timed when the bytes that complete it arrive (`data_received`), which is when an
aiohttp reader like `vllm bench serve`'s times its read.

Nothing between t0 and the request's write yields to the loop: an idle keep-alive connection is taken, t0 is
read, the request (head and body in one buffer) is written. HTTP/1.1 only, one request per connection at a
time, keep-alive, TLS for https (verified unless told not to).

    async with WireClient("http://127.0.0.1:8000", timeout_s=600) as client:
        error = await client.post_stream("/v1/completions", body, fold)   # "" when the stream completed
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

from ..core.contract import shorten
from ..inventory.values import url_port
from .bounded import MAX_BODY_BYTES, Inflater, TooLarge, hung_words, too_large_words
from .sse import MAX_EVENT_BYTES, SseSplitter, StreamBroken, not_event_stream

Clock = Callable[[], float]
_MAX_HEAD = 64 * 1024
_MAX_ERROR_BODY = 64 * 1024
__all__ = ["MAX_EVENT_BYTES", "StreamBroken", "StreamFold", "WireClient", "WireError", "WireTimeout"]


class WireError(Exception):
    """The connection failed before or during a response (the request's `error` names it)."""


class WireTimeout(WireError):
    """The request's whole time ran out (`hung_words`)."""


class StreamFold(Protocol):
    """What a streamed answer's events are handed to."""

    def started(self, at: float) -> None:
        """The request is about to be written (t0)."""

    def message(self, data: bytes, at: float) -> None:
        """One complete `data:` payload, at the time the bytes that completed it arrived; may raise StreamBroken."""

    def finish(self) -> None:
        """The stream ended whole; may raise StreamBroken."""


class _Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection that parses one streamed response at a time."""

    def __init__(self, clock: Clock, max_bytes: int = MAX_BODY_BYTES):
        self.clock = clock
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._done: asyncio.Future | None = None
        self._timing: StreamFold | None = None
        self.max_bytes = max_bytes
        self.received = 0
        """Bytes of the current response received so far (on the wire)."""
        self._inflater: Inflater | None = None
        self._state, self._keep_alive, self._status = "done", True, 0  # idle: reusable
        self._buf = self._error_body = b""
        self._splitter = SseSplitter()
        self._remaining = -1

    # --- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.transport = None
        if self._done is not None and not self._done.done():
            if self._state == "until-close" and exc is None:  # a body delimited by the close: complete
                self._end()
            else:
                self._fail(WireError(f"connection closed by the server {self._where()}"
                                     + (f": {exc}" if exc else "")))

    def data_received(self, data: bytes) -> None:
        now = self.clock()
        self.received += len(data)
        if self._done is None or self._done.done():
            return  # bytes after the response (or with no request): ignored, the connection is not reused
        try:
            if self.received > self.max_bytes:
                raise TooLarge(too_large_words(self.max_bytes, self.received))
            self._feed(data, now)
        except StreamBroken as broken:
            self._fail(broken)
        except (ValueError, WireError, TooLarge) as error:
            self._fail(WireError(str(error)))

    # --- one request
    def begin(self, request: bytes, timing: StreamFold) -> asyncio.Future:
        assert self.transport is not None
        self._done = asyncio.get_running_loop().create_future()
        self._timing = timing
        self._state = "head"
        self._buf = b""
        self._splitter = SseSplitter()
        self._status = 0
        self._keep_alive = True
        self._remaining = -1
        self._error_body = b""
        self._inflater = None
        self.received = 0
        timing.started(self.clock())
        self.transport.write(request)
        return self._done

    def _where(self) -> str:
        return {"head": "before the response head", "chunk-size": "mid-stream", "chunk-data": "mid-stream",
                "chunk-crlf": "mid-stream", "length": "mid-body", "until-close": "mid-body"}.get(self._state, "")

    def _feed(self, data: bytes, now: float) -> None:
        if self._state == "head":
            self._buf += data
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > _MAX_HEAD:
                    raise WireError(f"response head longer than {_MAX_HEAD} bytes")
                return
            head, data = self._buf[:end].decode("latin-1"), self._buf[end + 4:]
            self._buf = b""
            self._head(head)
        if self._state == "length":
            take = data[: self._remaining]
            self._remaining -= len(take)
            self._body(take, now)
            if self._remaining <= 0:
                self._end()
            return
        if self._state == "until-close":
            self._body(data, now)
            return
        # chunked transfer encoding, incremental
        buf = self._buf + data if self._buf else data
        pos, n = 0, len(buf)
        out: list[bytes] = []
        while pos < n:
            if self._state == "chunk-size":
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                size = int(buf[pos:eol].split(b";", 1)[0], 16)
                pos = eol + 2
                if size == 0:
                    self._state = "trailer"
                    continue
                self._remaining, self._state = size, "chunk-data"
            elif self._state == "chunk-data":
                take = min(self._remaining, n - pos)
                out.append(buf[pos:pos + take])
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    self._state = "chunk-crlf"
            elif self._state == "chunk-crlf":
                if n - pos < 2:
                    break
                pos += 2
                self._state = "chunk-size"
            else:  # trailer: the message ends at an empty line
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    break
                if eol == pos:
                    pos = n
                    if out:
                        self._body(b"".join(out), now)
                        out = []
                    self._end()
                    return
                pos = eol + 2
        self._buf = buf[pos:] if pos < n else b""
        if len(self._buf) > _MAX_HEAD:
            raise WireError(f"a chunk header longer than {_MAX_HEAD} bytes")
        if out:
            self._body(out[0] if len(out) == 1 else b"".join(out), now)

    def _head(self, head: str) -> None:
        status_line, *lines = head.split("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise WireError(f"not an HTTP/1.x response: {status_line[:100]!r}")
        self._status = int(parts[1])
        chunked, length, not_sse, encoding = False, None, not_event_stream(""), ""
        for line in lines:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "transfer-encoding":
                chunked = "chunked" in value
            elif name == "content-length":
                length = int(value)
            elif name == "connection":
                self._keep_alive = "close" not in value
            elif name == "content-type":
                not_sse = not_event_stream(value)  # the suite's one Content-Type rule (llmval.io.sse)
            elif name == "content-encoding" and value not in ("", "identity"):
                encoding = value
        if parts[0] == "HTTP/1.0":
            self._keep_alive = False
        if encoding:  # never asked for (no Accept-Encoding): decoded anyway, under the same cap
            self._inflater = Inflater(encoding, self.max_bytes)
        if self._status == 200 and not_sse:
            raise StreamBroken(f"{not_sse} ({status_line})")
        if chunked:
            self._state = "chunk-size"
        elif length is not None:
            self._state, self._remaining = "length", length
            if length == 0:
                self._end()
        else:
            self._state, self._keep_alive = "until-close", False

    def _body(self, payload: bytes, now: float) -> None:
        if self._inflater is not None:
            payload = self._inflater.feed(payload)
        if self._status != 200:
            if len(self._error_body) < _MAX_ERROR_BODY:
                self._error_body += payload[: _MAX_ERROR_BODY - len(self._error_body)]
            return
        timing = self._timing
        assert timing is not None
        for data in self._splitter.feed(payload):
            timing.message(data, now)

    def _end(self) -> None:
        if self._inflater is not None and self._status != 200:
            self._body(self._inflater.flush(), 0.0)
        if self._status == 200 and self._timing is not None and self._state != "done":
            now = self.clock()
            try:
                for data in self._splitter.close():  # an event the server ended without its blank line
                    self._timing.message(data, now)
            except StreamBroken as broken:
                self._fail(broken)
                return
        self._state = "done"
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _fail(self, error: Exception) -> None:
        self._keep_alive = False
        if self.transport is not None:
            self.transport.close()
        if self._done is not None and not self._done.done():
            self._done.set_exception(error)

    @property
    def reusable(self) -> bool:
        return (not self.closed and self._keep_alive and self._state == "done" and self.transport is not None
                and not self.transport.is_closing())

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abandon(self) -> None:
        """The request's waiter is gone (its task was cancelled, e.g. a load stopped mid-stream): drop the
        response and close the connection. The pending future is cancelled first, so the close cannot set an
        exception on it that nobody retrieves (asyncio would print "Future exception was never retrieved")."""
        if self._done is not None and not self._done.done():
            self._done.cancel()
        self._keep_alive = False
        self.close()


class WireClient:
    """Streamed completions over keep-alive connections to one server (`base_url`), timed as vLLM times them."""

    def __init__(self, base_url: str, *, headers: dict[str, str] | None = None, timeout_s: float = 600,
                 connect_timeout_s: float = 10, verify: bool = True, clock: Clock = time.perf_counter,
                 max_body_bytes: int = MAX_BODY_BYTES):
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base URL must be http(s)://host[:port], got {base_url!r}")
        self.host, self.port = url.hostname, url_port(base_url)
        self.prefix = url.path.rstrip("/")
        self.ssl = (ssl.create_default_context() if verify else ssl._create_unverified_context()) \
            if url.scheme == "https" else None
        host_header = url.netloc.rsplit("@", 1)[-1]
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self._head = (f"Host: {host_header}\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\n"
                      f"User-Agent: llmval-load\r\n{extra}").encode("latin-1")
        self.timeout_s, self.connect_timeout_s, self.clock = timeout_s, connect_timeout_s, clock
        """`timeout_s`: the time the whole exchange may take, connect to the last byte (as every request's)."""
        self.max_body_bytes = max_body_bytes
        self._idle: list[_Conn] = []
        self._all: set[_Conn] = set()

    def request_bytes(self, path: str, body: bytes) -> bytes:
        return (f"POST {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self._head
                + b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                _, conn = await loop.create_connection(lambda: _Conn(self.clock, self.max_body_bytes),
                                                      self.host, self.port, ssl=self.ssl)
        except TimeoutError as error:
            raise WireError(f"ConnectTimeout: connecting to {self.host}:{self.port}") from error
        except OSError as error:
            raise WireError(f"ConnectError: {self.host}:{self.port}: {error}") from error
        self._all.add(conn)
        return conn

    async def warm(self, connections: int) -> None:
        """Open `connections` keep-alive connections now (outside any measured window)."""
        fresh = await asyncio.gather(*(self._connect() for _ in range(max(0, connections - len(self._idle)))))
        self._idle.extend(fresh)

    async def post_stream(self, path: str, body: bytes, fold: StreamFold) -> str:
        """POST `body` to `path`, hand the streamed answer's events to `fold`, and say what went wrong ("" when the
        stream completed and `fold.finish()` accepted it); never raises for a failed request. `fold.started(t0)`
        is called right before the request is written."""
        request = self.request_bytes(path, body)
        deadline = self.clock() + self.timeout_s
        conn = None
        for _ in range(2):  # a stale idle connection may be closed under us once
            conn = None
            while self._idle:
                candidate = self._idle.pop()
                if candidate.reusable:
                    conn = candidate
                    break
                candidate.close()
                self._all.discard(candidate)
            reused = conn is not None
            if conn is None:
                try:
                    conn = await self._connect()
                except WireError as error:
                    return str(error)
            done = conn.begin(request, fold)
            try:
                await self._wait(conn, done, deadline)
            except asyncio.CancelledError:
                conn.abandon()  # cut by the caller: the future this task waited on must not outlive it
                self._all.discard(conn)
                raise
            except WireTimeout as error:
                self._all.discard(conn)
                return str(error)
            except WireError as error:
                self._all.discard(conn)
                if reused and conn.received == 0:
                    continue  # closed before any byte of the answer: the server dropped an idle connection
                return f"ReadError: {error}"
            except StreamBroken as broken:
                self._all.discard(conn)
                return str(broken)
            break
        else:
            return ""
        assert conn is not None
        error = ""
        if conn._status != 200:  # redacted before it is cut: a cut secret is no longer one redact() finds
            error = f"HTTP {conn._status}: {shorten(conn._error_body.decode('utf-8', 'replace'), 300)}"
        else:
            try:
                fold.finish()
            except StreamBroken as broken:
                error = str(broken)
        if conn.reusable:
            self._idle.append(conn)
        else:
            conn.close()
            self._all.discard(conn)
        return error

    async def _wait(self, conn: _Conn, done: asyncio.Future, deadline: float) -> None:
        """Until the answer is whole, or the request's time (`deadline`, on `clock`) is spent: one timer per
        request, nothing per event."""
        expire = asyncio.get_running_loop().call_later(
            max(deadline - self.clock(), 0), lambda: conn._fail(WireTimeout(hung_words(self.timeout_s, conn.received))))
        try:
            await done
        finally:
            expire.cancel()

    async def aclose(self) -> None:
        for conn in list(self._all):
            conn.close()
        self._all.clear()
        self._idle.clear()

    async def __aenter__(self) -> WireClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
