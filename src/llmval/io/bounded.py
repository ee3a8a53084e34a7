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
from dataclasses import dataclass

import httpcore
import httpx

HUNG = "the server is hung or trickling"
MAX_BODY_BYTES = 64 * 2**20
"""The largest answer read (headers included): 64 MiB. Real answers are far smaller: /v1/models of a few models
is a few kB, /metrics of a busy vLLM under 1 MB, a chat completion of 32k tokens a few hundred kB."""


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
        if not self.read:
            return f"no answer within {self.total_s:g} s (the whole request's time; nothing came): {HUNG}"
        return (f"no complete answer within {self.total_s:g} s (the whole request's time; {self.read} bytes came): "
                f"{HUNG}")

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
            raise httpcore.ReadError(f"the answer is larger than {self.max_bytes // 2**20} MiB "
                                     f"({self.read} bytes read): refused to read more")
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


class BoundedTransport(httpx.HTTPTransport):
    """httpx's transport, each request bounded by its read timeout as a whole and by `max_body_bytes`."""

    def __init__(self, *, max_body_bytes: int = MAX_BODY_BYTES, **kwargs: typing.Any):
        super().__init__(**kwargs)
        self.max_body_bytes = max_body_bytes
        _bound_pool(self, _Backend)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        _BUDGET.set(Budget.of(request, self.max_body_bytes))  # kept for the body, read after this returns
        return super().handle_request(request)


class AsyncBoundedTransport(httpx.AsyncHTTPTransport):
    """The async twin of BoundedTransport (one budget per asyncio task)."""

    def __init__(self, *, max_body_bytes: int = MAX_BODY_BYTES, **kwargs: typing.Any):
        super().__init__(**kwargs)
        self.max_body_bytes = max_body_bytes
        _bound_pool(self, _AsyncBackend)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        _BUDGET.set(Budget.of(request, self.max_body_bytes))
        return await super().handle_async_request(request)
