"""httpcore on plain asyncio streams, for the load generator (httpx's own default goes through anyio).

httpcore's default network backend on asyncio is anyio's: every read opens a cancel scope and passes a
checkpoint (an extra event-loop turn), and so does every pool-lock acquisition. Under thousands of SSE
events per second, or 16 streams whose chunks arrive at once, those turns delay each other's timestamps.
This backend reads from an `asyncio.StreamReader` (no turn when data is buffered) with an `asyncio.timeout`
only when httpx asks for one. Everything above it (httpx, httpcore's HTTP/1.1, h11) stays as it is.

    transport = asyncio_transport(max_connections=C + 2)
    httpx.AsyncClient(base_url=..., transport=transport)
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import typing

import httpcore
import httpx
from httpcore._utils import is_socket_readable


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader, self._writer = reader, writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        reader = self._reader
        try:
            if timeout is None:
                return await reader.read(max_bytes)
            async with asyncio.timeout(timeout):
                return await reader.read(max_bytes)
        except TimeoutError as error:
            raise httpcore.ReadTimeout(str(error)) from error
        except OSError as error:
            raise httpcore.ReadError(str(error)) from error

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            async with asyncio.timeout(timeout):
                await self._writer.drain()
        except TimeoutError as error:
            raise httpcore.WriteTimeout(str(error)) from error
        except OSError as error:
            raise httpcore.WriteError(str(error)) from error

    async def aclose(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as error:
            raise httpcore.ConnectTimeout(str(error)) from error
        except (OSError, ssl.SSLError) as error:
            raise httpcore.ConnectError(str(error)) from error
        return self

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "is_readable":
            return is_socket_readable(self._writer.get_extra_info("socket"))
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        return self._writer.get_extra_info(info)


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """TCP connections as asyncio streams (no TLS-in-TLS, no unix sockets: what the load generator uses)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: typing.Iterable | None = None) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=(local_address, 0) if local_address else None, limit=2**20)
        except TimeoutError as error:
            raise httpcore.ConnectTimeout(str(error)) from error
        except OSError as error:
            raise httpcore.ConnectError(str(error)) from error
        for option in socket_options or ():
            writer.get_extra_info("socket").setsockopt(*option)
        return _Stream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def asyncio_transport(*, max_connections: int, verify: bool | ssl.SSLContext = True) -> httpx.AsyncHTTPTransport:
    """httpx's transport with its connection pool on `AsyncioBackend` (same pool settings otherwise)."""
    transport = httpx.AsyncHTTPTransport(retries=0, verify=verify, limits=httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections))
    pool = transport._pool  # httpx keeps its httpcore pool here; rebuilt with our backend, same settings
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=pool._ssl_context, max_connections=max_connections, max_keepalive_connections=max_connections,
        keepalive_expiry=pool._keepalive_expiry, http1=True, http2=False, retries=0,
        network_backend=AsyncioBackend())
    return transport
