"""An httpx transport straight on h11 and asyncio streams: no event-loop turn between t0 and the write.

`vllm bench serve` takes t0 right before `session.post`, and aiohttp puts the request on the wire without
yielding to the loop in between. httpx's default transport (httpcore) passes several lock and event
checkpoints first; with C requests started together, each turn runs every other task's step, so each
request's t0-to-wire time grows with C (measured on the calibration source at C=16: 16-100 ms of
"TTFT" that was the client's). This transport writes the request synchronously once it has an idle
keep-alive connection, and yields only to wait for the answer. HTTP/1.1 only; the pool is a plain list
(one event loop, no threads).

Bounded as `llmval.io.bounded`'s transports are: the request's read timeout is the time the whole exchange may
take (connect to last body byte; a /metrics that trickles ends at it, named hung), the answer stops at
`MAX_BODY_BYTES` on the wire, and a compressed answer is inflated here under the same cap and deadline
(`bounded.decoded`), so httpx above never inflates what nothing counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator

import h11
import httpcore
import httpx

from .bounded import MAX_BODY_BYTES, Budget, decoded

_READ = 65536


def _left(budget: Budget, timeout: float | None) -> float | None:
    """`timeout` shortened to what is left of the request's time; ReadTimeout naming the hang when nothing is."""
    try:
        return budget.clamp(timeout)
    except httpcore.ReadTimeout as error:
        raise httpx.ReadTimeout(str(error)) from None


class _Connection:
    __slots__ = ("h11", "key", "reader", "writer")

    def __init__(self, key: tuple, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.key, self.reader, self.writer = key, reader, writer
        self.h11 = h11.Connection(h11.CLIENT)

    async def next_event(self, budget: Budget):
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            timeout = _left(budget, None)
            try:
                if timeout is None:
                    data = await self.reader.read(_READ)
                else:
                    async with asyncio.timeout(timeout):
                        data = await self.reader.read(_READ)
                budget.count(data)
            except TimeoutError as error:
                raise httpx.ReadTimeout(budget.hung()) from error
            except httpcore.ReadError as error:  # past the cap
                raise httpx.ReadError(str(error)) from None
            except OSError as error:
                raise httpx.ReadError(str(error)) from error
            self.h11.receive_data(data)

    def close(self) -> None:
        self.writer.close()


class _Body(httpx.AsyncByteStream):
    def __init__(self, transport: H11Transport, conn: _Connection, budget: Budget):
        self._transport, self._conn, self._budget = transport, conn, budget
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            while True:
                event = await self._conn.next_event(self._budget)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    self._done = isinstance(event, h11.EndOfMessage)
                    return
        except h11.RemoteProtocolError as error:
            raise httpx.RemoteProtocolError(str(error)) from error

    async def aclose(self) -> None:
        self._transport._release(self._conn, reusable=self._done)


class H11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 keep-alive connections, reused in LIFO order; TLS for https URLs (verified)."""

    def __init__(self, *, verify: bool = True, max_body_bytes: int = MAX_BODY_BYTES):
        self._idle: dict[tuple, list[_Connection]] = {}
        self.max_body_bytes = max_body_bytes
        self._ssl = ssl.create_default_context() if verify else ssl._create_unverified_context()

    async def _connect(self, key: tuple, timeout: float | None) -> _Connection:
        scheme, host, port = key
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=self._ssl if scheme == "https" else None, limit=2**20)
        except TimeoutError as error:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port}") from error
        except OSError as error:
            raise httpx.ConnectError(f"{host}:{port}: {error}") from error
        return _Connection(key, reader, writer)

    def _release(self, conn: _Connection, *, reusable: bool) -> None:
        if reusable and conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
            conn.h11.start_next_cycle()
            self._idle.setdefault(conn.key, []).append(conn)
        else:
            conn.close()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        budget = Budget.of(request, self.max_body_bytes)
        url = request.url
        key = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        body = request.content if isinstance(request.stream, httpx.ByteStream) else await request.aread()
        headers = list(request.headers.raw)
        if body and not any(k.lower() == b"content-length" for k, _ in headers):
            headers.append((b"content-length", str(len(body)).encode()))
        idle = self._idle.get(key)
        while True:
            if idle:
                conn, fresh = idle.pop(), False
                if conn.reader.at_eof() or conn.writer.is_closing():  # the server closed it while idle
                    conn.close()
                    continue
            else:
                conn, fresh = await self._connect(key, _left(budget, timeouts.get("connect"))), True
            try:
                # the request goes out here, in one write, with no await before it
                data = conn.h11.send(h11.Request(method=request.method, target=url.raw_path, headers=headers))
                if body:
                    data += conn.h11.send(h11.Data(data=body))
                data += conn.h11.send(h11.EndOfMessage())
                conn.writer.write(data)
                event = await conn.next_event(budget)
            except (httpx.ReadError, h11.RemoteProtocolError) as error:
                conn.close()
                if fresh:
                    raise httpx.RemoteProtocolError(str(error)) from error
                continue  # a stale keep-alive connection: try another (the request was not answered)
            break
        if not isinstance(event, h11.Response):
            conn.close()
            raise httpx.RemoteProtocolError(f"expected a response, got {type(event).__name__}")
        response = httpx.Response(event.status_code, headers=event.headers, extensions={"http_version": b"HTTP/1.1"},
                                  stream=_Body(self, conn, budget), request=request)
        return decoded(response, budget, request)

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                with contextlib.suppress(OSError):
                    conn.close()
        self._idle.clear()
