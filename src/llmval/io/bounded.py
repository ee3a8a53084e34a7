"""HTTP transports with a whole-request deadline and a body size cap (issue 23.2, 23.3).

httpx's timeouts are per read: a server that sends its headers and then one byte a second never trips a 600 s
read timeout, and one that streams an event a second never trips a 10 s one. Here the request's timeout is the
time the *whole* exchange may take, connect to last body byte: every socket read and write waits at most what
is left of it, and once it is spent the read fails with `httpx.ReadTimeout` whose message names the server as
hung (`no complete answer within 10 s (the whole request's time; 12 bytes came): the server is hung or
trickling`). The same transports stop reading an answer past `MAX_BODY_BYTES` (a 200 MB /v1/models took 2.2 GB
of memory): the read fails with `httpx.ReadError` saying so.

The bound sits under httpcore's connection pool, at its network backend (`httpcore.NetworkBackend`, public),
so headers that trickle are bounded too; which request a socket serves is told by a context variable that
`handle_request` sets (one request at a time per thread or asyncio task, as httpx's connection pool does it).

    >>> transport = BoundedTransport(retries=0)   # what llmval.io.http.make_client uses
"""

from __future__ import annotations

import contextvars
import time
import typing
import zlib
from dataclasses import dataclass

import httpcore
import httpx

HUNG = "the server is hung or trickling"
MAX_BODY_BYTES = 64 * 2**20
"""The largest answer read (headers included): 64 MiB, counted on the wire and again after decoding (a 1 MiB
gzip body inflates to 1 GiB). Real answers are far smaller: /v1/models of a few models is a few kB, /metrics
of a busy vLLM under 1 MB, a chat completion of 32k tokens a few hundred kB."""
DECODED_FROM = "x-llmval-content-encoding"
"""The header a decoded answer carries instead of Content-Encoding: the encoding it came with (recorded, so a
replay knows the live server compressed, and is not decoded twice)."""
DECODABLE = ("gzip", "x-gzip", "deflate", "identity")


def hung_words(total_s: float | None, read: int) -> str:
    """The words of a request whose whole time ran out (`is_hung` knows them)."""
    if not read:
        return f"no answer within {total_s:g} s (the whole request's time; nothing came): {HUNG}"
    return f"no complete answer within {total_s:g} s (the whole request's time; {read} bytes came): {HUNG}"


def too_large_words(max_bytes: int, read: int, what: str = "the answer is") -> str:
    return f"{what} larger than {max_bytes // 2**20} MiB ({read} bytes read): refused to read more"


class TooLarge(Exception):
    """An answer (or what it inflates to) passed its byte cap."""


class Inflater:
    """Decodes a Content-Encoding (gzip, deflate, a list of them) chunk by chunk, never past `max_bytes` of output:
    each `zlib` call is asked for at most what is left, so a bomb costs `max_bytes` of memory and the time to
    inflate it, not its inflated size. `feed` and `flush` raise `TooLarge` past the cap and `ValueError` for an
    encoding it does not know or bytes that do not decode."""

    def __init__(self, encoding: str, max_bytes: int = MAX_BODY_BYTES):
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        unknown = [c for c in codings if c not in DECODABLE]
        if unknown:
            raise ValueError(f"Content-Encoding {encoding!r} is not one the suite decodes ({', '.join(DECODABLE)})")
        self.encoding = ", ".join(codings)
        self.max_bytes, self.out = max_bytes, 0
        # applied last first (RFC 9110: the codings are listed in the order they were applied)
        self._stages = [_stage(c) for c in reversed(codings) if c != "identity"]

    def feed(self, data: bytes) -> bytes:
        for index in range(len(self._stages)):
            data = self._run(index, data)
        return data

    def flush(self) -> bytes:
        data = b""
        for index, stage in enumerate(self._stages):
            data = self._run(index, data) + self._capped(stage.flush())
        return data

    def _run(self, index: int, data: bytes) -> bytes:
        stage, parts = self._stages[index], []
        try:
            while data:
                part = stage.decompress(data, self.max_bytes - self.out + 1)
                parts.append(self._capped(part))
                data = stage.unconsumed_tail
                if not part and data:
                    break
        except zlib.error as error:
            raise ValueError(f"the {self.encoding}-encoded answer does not decode: {error}") from None
        return b"".join(parts)

    def _capped(self, part: bytes) -> bytes:
        self.out += len(part)
        if self.out > self.max_bytes:
            raise TooLarge(too_large_words(self.max_bytes, self.out, f"the answer ({self.encoding}) inflates to"))
        return part


def _stage(coding: str):
    return zlib.decompressobj(zlib.MAX_WBITS | 32)  # a gzip or a zlib header, whichever came


@dataclass
class Budget:
    """What one request may still spend: its deadline (monotonic seconds) and the bytes it may read."""

    total_s: float | None
    started: float
    max_bytes: int = MAX_BODY_BYTES
    read: int = 0

    @classmethod
    def of(cls, request: httpx.Request, max_bytes: int = MAX_BODY_BYTES) -> Budget:
        """The budget of `request`: its read timeout (the client's, or the one given to this request) is the time
        the whole exchange may take."""
        timeouts = request.extensions.get("timeout") or {}
        total = timeouts.get("read")
        return cls(total_s=float(total) if total is not None else None, started=time.monotonic(),
                   max_bytes=max_bytes)

    def hung(self) -> str:
        return hung_words(self.total_s, self.read)

    def clamp(self, timeout: float | None) -> float | None:
        """`timeout` shortened to what is left; ReadTimeout naming the hang when nothing is."""
        if self.total_s is None:
            return timeout
        left = self.started + self.total_s - time.monotonic()
        if left <= 0:
            raise httpcore.ReadTimeout(self.hung())
        return left if timeout is None else min(timeout, left)

    def count(self, data: bytes) -> bytes:
        self.read += len(data)
        if self.read > self.max_bytes:
            raise httpcore.ReadError(too_large_words(self.max_bytes, self.read))
        return data

    def expired(self) -> bool:
        return self.total_s is not None and time.monotonic() >= self.started + self.total_s


def is_hung(error: BaseException) -> bool:
    """True for the timeout of a request whose whole time ran out (the server sent too slowly or nothing)."""
    return isinstance(error, httpx.TimeoutException | httpcore.TimeoutException) and HUNG in str(error)


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("llmval_http_budget", default=None)


def _timeout_said(budget: Budget | None, error: httpcore.TimeoutException) -> httpcore.TimeoutException:
    """A socket timeout that ended because the whole request's time ran out says so."""
    if budget is not None and budget.expired():
        return type(error)(budget.hung())
    return error


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        budget = _BUDGET.get()
        if budget is None:
            return self._inner.read(max_bytes, timeout)
        try:
            return budget.count(self._inner.read(max_bytes, budget.clamp(timeout)))
        except httpcore.TimeoutException as error:
            raise _timeout_said(budget, error) from None

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        budget = _BUDGET.get()
        try:
            self._inner.write(buffer, budget.clamp(timeout) if budget else timeout)
        except httpcore.TimeoutException as error:
            raise _timeout_said(budget, error) from None

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        budget = _BUDGET.get()
        return _Stream(self._inner.start_tls(ssl_context, server_hostname,
                                             budget.clamp(timeout) if budget else timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend):
        self._inner = inner

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        budget = _BUDGET.get()
        return _Stream(self._inner.connect_tcp(host, port, budget.clamp(timeout) if budget else timeout,
                                               local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _Stream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream):
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        budget = _BUDGET.get()
        if budget is None:
            return await self._inner.read(max_bytes, timeout)
        try:
            return budget.count(await self._inner.read(max_bytes, budget.clamp(timeout)))
        except httpcore.TimeoutException as error:
            raise _timeout_said(budget, error) from None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        budget = _BUDGET.get()
        try:
            await self._inner.write(buffer, budget.clamp(timeout) if budget else timeout)
        except httpcore.TimeoutException as error:
            raise _timeout_said(budget, error) from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        budget = _BUDGET.get()
        return _AsyncStream(await self._inner.start_tls(ssl_context, server_hostname,
                                                        budget.clamp(timeout) if budget else timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend):
        self._inner = inner

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        budget = _BUDGET.get()
        return _AsyncStream(await self._inner.connect_tcp(host, port, budget.clamp(timeout) if budget else timeout,
                                                          local_address, socket_options))

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _AsyncStream(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _bound_pool(transport: httpx.HTTPTransport | httpx.AsyncHTTPTransport, wrap) -> None:
    pool = transport._pool  # httpx builds the pool; its backend is replaced before any connection exists
    if not hasattr(pool, "_network_backend"):  # an httpcore without it: fail loudly, not unbounded
        raise RuntimeError("httpcore's connection pool has no _network_backend: llmval.io.bounded needs updating")
    pool._network_backend = wrap(pool._network_backend)


def decoded_headers(headers: httpx.Headers) -> tuple[str, httpx.Headers]:
    """(the Content-Encoding the answer came with, or "", the headers of its decoded form: no Content-Encoding or
    Content-Length, `DECODED_FROM` naming the encoding)."""
    encoding = headers.get("content-encoding", "").strip()
    if not encoding or encoding.lower() == "identity":
        return "", headers
    kept = httpx.Headers([(k, v) for k, v in headers.multi_items()
                          if k.lower() not in ("content-encoding", "content-length")])
    kept[DECODED_FROM] = encoding
    return encoding, kept


def _decode_error(error: Exception) -> httpx.TransportError:
    return httpx.ReadError(str(error)) if isinstance(error, TooLarge) else httpx.DecodingError(str(error))


class _Decoded(httpx.SyncByteStream):
    """The body decoded here, under the cap and inside the request's deadline (httpx would inflate it later,
    unbounded, outside both)."""

    def __init__(self, inner: httpx.SyncByteStream, encoding: str, budget: Budget):
        self._inner, self._encoding, self._budget = inner, encoding, budget

    def __iter__(self) -> typing.Iterator[bytes]:
        try:
            self._inflater = Inflater(self._encoding, self._budget.max_bytes)
            for chunk in self._inner:
                if self._budget.expired():
                    raise httpx.ReadTimeout(self._budget.hung())
                if out := self._inflater.feed(chunk):
                    yield out
            if out := self._inflater.flush():
                yield out
        except (TooLarge, ValueError) as error:
            raise _decode_error(error) from None

    def close(self) -> None:
        self._inner.close()


class _AsyncDecoded(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, encoding: str, budget: Budget):
        self._inner, self._encoding, self._budget = inner, encoding, budget

    async def __aiter__(self) -> typing.AsyncIterator[bytes]:
        try:
            self._inflater = Inflater(self._encoding, self._budget.max_bytes)
            async for chunk in self._inner:
                if self._budget.expired():
                    raise httpx.ReadTimeout(self._budget.hung())
                if out := self._inflater.feed(chunk):
                    yield out
            if out := self._inflater.flush():
                yield out
        except (TooLarge, ValueError) as error:
            raise _decode_error(error) from None

    async def aclose(self) -> None:
        await self._inner.aclose()


def decoded(response: httpx.Response, budget: Budget, request: httpx.Request) -> httpx.Response:
    """`response` as it reads decoded: a compressed body is inflated by the transport, bounded by `budget` (its
    cap and its deadline), and the answer says which encoding it came with (`DECODED_FROM`). An encoding the suite
    does not decode fails when the body is read (httpx.DecodingError)."""
    encoding, headers = decoded_headers(response.headers)
    if not encoding:
        return response
    stream = response.stream
    body = _Decoded(stream, encoding, budget) if isinstance(stream, httpx.SyncByteStream) \
        else _AsyncDecoded(stream, encoding, budget)  # type: ignore[arg-type]
    return httpx.Response(response.status_code, headers=headers, stream=body, extensions=response.extensions,
                          request=request)


class BoundedTransport(httpx.HTTPTransport):
    """httpx's transport, each request bounded by its read timeout as a whole and by `max_body_bytes`."""

    def __init__(self, *, max_body_bytes: int = MAX_BODY_BYTES, **kwargs: typing.Any):
        super().__init__(**kwargs)
        self.max_body_bytes = max_body_bytes
        _bound_pool(self, _Backend)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        budget = Budget.of(request, self.max_body_bytes)
        _BUDGET.set(budget)  # kept for the body, read after this returns
        return decoded(super().handle_request(request), budget, request)


class AsyncBoundedTransport(httpx.AsyncHTTPTransport):
    """The async twin of BoundedTransport (one budget per asyncio task)."""

    def __init__(self, *, max_body_bytes: int = MAX_BODY_BYTES, **kwargs: typing.Any):
        super().__init__(**kwargs)
        self.max_body_bytes = max_body_bytes
        _bound_pool(self, _AsyncBackend)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        budget = Budget.of(request, self.max_body_bytes)
        _BUDGET.set(budget)
        return decoded(await super().handle_async_request(request), budget, request)
