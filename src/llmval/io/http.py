"""HTTP clients for serving endpoints, with recording and replay behind httpx's transport layer.

Foreign errors (httpx's) are translated here and nowhere else, as httpx maps httpcore's
(`map_httpcore_exceptions`): `with httpx_errors("[endpoint] GET url"):` around a request turns each into the
`EndpointError` of `HTTPX_ERRORS` (most specific first, chained `from exc`, keeping its class name as `kind`
and its words as `detail`), so a check that cannot reach its endpoint says which endpoint, which URL and why,
and every caller catches our errors only. `json_of` is the one reading of a JSON answer (status, then JSON).

    >>> with httpx_errors("[ep] GET http://x/health"):
    ...     raise httpx.ConnectError("[Errno 111] Connection refused")
    Traceback (most recent call last):
    llmval.core.errors.EndpointUnreachable: [ep] GET http://x/health: ConnectError: [Errno 111] Connection refused
"""

from __future__ import annotations

import ast
import base64
import ipaddress
import os
import re
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import httpx

from ..core.contract import excerpt, redact
from ..core.errors import EndpointError, EndpointProtocolError, EndpointTimeout, EndpointUnreachable
from .answers import parse_json
from .bounded import DECODED_FROM, AsyncBoundedTransport, BoundedTransport, is_hung
from .h11transport import H11Transport
from .recording import HttpExchange, Recorder, Replay, body_key

if TYPE_CHECKING:
    from ..inventory import EndpointSpec

HTTPX_ERRORS: tuple[tuple[type[Exception], type[EndpointError]], ...] = (
    (httpx.TimeoutException, EndpointTimeout),  # ConnectTimeout, ReadTimeout, WriteTimeout, PoolTimeout
    (httpx.ConnectError, EndpointUnreachable),
    (httpx.NetworkError, EndpointUnreachable),  # ReadError, WriteError, CloseError: the connection broke
    (httpx.ProtocolError, EndpointProtocolError),  # LocalProtocolError, RemoteProtocolError
    (httpx.DecodingError, EndpointProtocolError),
    (httpx.TooManyRedirects, EndpointProtocolError),
    (httpx.HTTPError, EndpointError),  # ProxyError, UnsupportedProtocol, HTTPStatusError, other TransportErrors
    (httpx.InvalidURL, EndpointError),
    (httpx.CookieConflict, EndpointError),
    (httpx.StreamError, EndpointError),  # StreamConsumed, StreamClosed, ResponseNotRead, RequestNotRead
)
"""Each foreign error class and ours, most specific first (a self-test checks that every httpx error class has an
entry and that no entry is shadowed by a more general one before it)."""
FOREIGN_ERRORS: tuple[type[Exception], ...] = tuple(theirs for theirs, _ in HTTPX_ERRORS)


def translate(error: Exception, where: str = "", *, timeout_s: float | None = None) -> EndpointError:
    """Our error for a foreign one (the class of its first `HTTPX_ERRORS` entry), saying `<where>: <what>`: a timeout
    as `no answer within <timeout_s> s (ReadTimeout)` (or the whole-request deadline's own words: hung), anything
    else as `<Class>: <its words>`."""
    ours = next(mine for theirs, mine in HTTPX_ERRORS if isinstance(error, theirs))
    kind, detail = type(error).__name__, str(error)
    if ours is EndpointTimeout:
        within = f"{timeout_s:g} s" if timeout_s else "the timeout"
        what = detail if is_hung(error) else f"no answer within {within} ({kind})"
    else:
        what = f"{kind}: {detail}"
    return ours(f"{where}: {what}" if where else what, kind=kind, detail=detail)


@contextmanager
def httpx_errors(where: str = "", *, timeout_s: float | None = None) -> Iterator[None]:
    """The error boundary: an httpx error raised inside becomes ours (`translate`), chained from it."""
    try:
        yield
    except FOREIGN_ERRORS as error:
        raise translate(error, where, timeout_s=timeout_s) from error


RECORDED_HEADERS = {"content-type", DECODED_FROM}
"""Only the content type and the encoding the body came with are kept (never a credential header); the body is
stored decoded and redacted, its length follows it."""


def _redacted_bytes(body: bytes) -> bytes:
    """`body` with every secret removed (an engine that echoes the API key must not leak it into a recording);
    bytes that are not UTF-8 pass through unchanged (surrogateescape)."""
    text = body.decode("utf-8", "surrogateescape")
    clean = redact(text)
    return body if clean == text else clean.encode("utf-8", "surrogateescape")


def _exchange(request: httpx.Request, response: httpx.Response | None, body: bytes, elapsed_s: float,
              error: str | None = None) -> HttpExchange:
    request_body = request.content
    return HttpExchange(
        method=request.method,
        url=str(request.url),
        request_body_sha256=body_key(request_body),
        request_body=redact(request_body.decode("utf-8", "replace"))[:20000],
        status=response.status_code if response is not None else 0,
        headers=[(k, v) for k, v in (response.headers.items() if response is not None else [])
                 if k.lower() in RECORDED_HEADERS],
        body_b64=base64.b64encode(_redacted_bytes(body)).decode("ascii"),
        elapsed_s=round(elapsed_s, 4),
        error=error,
    )


class _TeeStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, on_close):
        self._inner, self._on_close, self._chunks = inner, on_close, []

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk

    def close(self) -> None:
        self._inner.close()
        self._on_close(b"".join(self._chunks))


class _AsyncTeeStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, on_close):
        self._inner, self._on_close, self._chunks = inner, on_close, []

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
        self._on_close(b"".join(self._chunks))


class RecordingTransport(httpx.BaseTransport):
    """Passes requests to `inner` and records each exchange once its body has been read."""

    def __init__(self, inner: httpx.BaseTransport, recorder: Recorder):
        self._inner, self._recorder = inner, recorder

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        started = time.monotonic()
        try:
            response = self._inner.handle_request(request)
        except httpx.TransportError as error:
            self._recorder.http(_exchange(request, None, b"", time.monotonic() - started, repr(error)))
            raise
        response.stream = _TeeStream(
            response.stream,
            lambda body: self._recorder.http(_exchange(request, response, body, time.monotonic() - started)),
        )
        return response

    def close(self) -> None:
        self._inner.close()


class AsyncRecordingTransport(httpx.AsyncBaseTransport):
    """The async twin of RecordingTransport."""

    def __init__(self, inner: httpx.AsyncBaseTransport, recorder: Recorder):
        self._inner, self._recorder = inner, recorder

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        started = time.monotonic()
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError as error:
            self._recorder.http(_exchange(request, None, b"", time.monotonic() - started, repr(error)))
            raise
        response.stream = _AsyncTeeStream(
            response.stream,
            lambda body: self._recorder.http(_exchange(request, response, body, time.monotonic() - started)),
        )
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


RECORDED_ERROR_RE = re.compile(r"^(?P<kind>[A-Z]\w*)\((?P<args>.*)\)$", re.S)


def recorded_error(error: str, request: httpx.Request) -> httpx.TransportError:
    """The httpx error a recording's `error` (the live error's repr, `ReadTimeout('timed out')`) stands for: the
    same class with the same words, so the replayed verdict is the live one (a timeout stays `EndpointTimeout`,
    `no answer within 60 s (ReadTimeout)`). A repr that names no httpx transport error replays as a ConnectError
    that quotes it whole.

    >>> type(recorded_error("ReadTimeout('timed out')", httpx.Request("GET", "http://x/"))).__name__
    'ReadTimeout'
    >>> str(recorded_error("ConnectError('[Errno 111] Connection refused')", httpx.Request("GET", "http://x/")))
    '[Errno 111] Connection refused'
    """
    match = RECORDED_ERROR_RE.match(error.strip())
    kind = getattr(httpx, match["kind"], None) if match else None
    if match and isinstance(kind, type) and issubclass(kind, httpx.TransportError):
        try:
            words = ast.literal_eval(match["args"]) if match["args"] else ""
        except (ValueError, SyntaxError):
            words = match["args"]
        return kind(words if isinstance(words, str) else str(words), request=request)
    return httpx.ConnectError(f"(replayed) {error}", request=request)


def _replayed(replay: Replay, request: httpx.Request) -> httpx.Response:
    exchange = replay.http(request.method, str(request.url), request.read())
    if exchange.error is not None:
        raise recorded_error(exchange.error, request)
    return httpx.Response(exchange.status, headers=exchange.headers, content=exchange.body, request=request)


class ReplayTransport(httpx.BaseTransport):
    """Answers requests from a recording; never touches the network."""

    def __init__(self, replay: Replay):
        self._replay = replay

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return _replayed(self._replay, request)


class AsyncReplayTransport(httpx.AsyncBaseTransport):
    """The async twin of ReplayTransport."""

    def __init__(self, replay: Replay):
        self._replay = replay

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return _replayed(self._replay, request)


def port_open(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """True when something accepts TCP connections on host:port (nothing is read or sent)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def plaintext_key_warnings(inventory) -> list[str]:
    """One warning per endpoint whose API key would go over plain http to a host that is not loopback."""
    warnings = []
    for endpoint in inventory.endpoints:
        url = httpx.URL(str(endpoint.base_url))
        if endpoint.api_key_env and os.environ.get(endpoint.api_key_env) and url.scheme == "http":
            try:
                loopback = ipaddress.ip_address(url.host).is_loopback
            except ValueError:
                loopback = url.host == "localhost"
            if not loopback:
                warnings.append(f"[{endpoint.name}] the API key (${endpoint.api_key_env}) is sent over plain http "
                                f"to {url.host}: anyone on the path can read it; use https or a tunnel")
    return warnings


def _headers(api_key_env: str | None) -> dict[str, str]:
    key = os.environ.get(api_key_env, "") if api_key_env else ""
    return {"Authorization": f"Bearer {key}"} if key else {}


def api_key_headers(api_key_env: str | None) -> dict[str, str]:
    """The Authorization header of an endpoint's API key (from the named environment variable), or none."""
    return _headers(api_key_env)


def make_client(base_url: str, *, api_key_env: str | None = None, timeout_s: float = 60,
                recorder: Recorder | None = None, replay: Replay | None = None) -> httpx.Client:
    """A client for one endpoint: live, recording, or replaying."""
    transport: httpx.BaseTransport
    if replay is not None:
        transport = ReplayTransport(replay)
    else:
        transport = BoundedTransport(retries=0)  # the timeout bounds the whole request; bodies capped
        if recorder is not None:
            transport = RecordingTransport(transport, recorder)
    return httpx.Client(base_url=base_url, headers=_headers(api_key_env), transport=transport,
                        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)))


def make_async_client(base_url: str, *, api_key_env: str | None = None, timeout_s: float = 60,
                      recorder: Recorder | None = None, replay: Replay | None = None,
                      max_connections: int = 256, asyncio_native: bool = False) -> httpx.AsyncClient:
    """The async twin of make_client, for load generation.

    `asyncio_native`: h11 on asyncio streams (`llmval.io.h11transport`) instead of httpcore: the request
    is written with no event-loop turn after t0, as aiohttp does for `vllm bench serve`, so C requests started
    together are each timed from their own start, not from the others' turns.
    """
    transport: httpx.AsyncBaseTransport
    if replay is not None:
        transport = AsyncReplayTransport(replay)
    elif asyncio_native and recorder is None:
        transport = H11Transport()
    else:
        transport = AsyncBoundedTransport(retries=0, limits=httpx.Limits(max_connections=max_connections))
        if recorder is not None:
            transport = AsyncRecordingTransport(transport, recorder)
    return httpx.AsyncClient(base_url=base_url, headers=_headers(api_key_env), transport=transport,
                             timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)))


def endpoint_client(spec: EndpointSpec, *, recorder: Recorder | None = None, replay: Replay | None = None,
                    timeout_s: float | None = None) -> httpx.Client:
    """The client for one inventory endpoint: its base URL, API key and request timeout (or `timeout_s`)."""
    return make_client(spec.root_url, api_key_env=spec.api_key_env,
                       timeout_s=spec.request_timeout_s if timeout_s is None else timeout_s,
                       recorder=recorder, replay=replay)


def endpoint_async_client(spec: EndpointSpec, *, max_connections: int = 256) -> httpx.AsyncClient:
    """The async twin of endpoint_client, for load generation (live only: perf is never recorded)."""
    return make_async_client(spec.root_url, api_key_env=spec.api_key_env,
                             timeout_s=spec.request_timeout_s, max_connections=max_connections, asyncio_native=True)


def get_json(client: httpx.Client, path: str, *, endpoint: str, method: str = "GET",
             json_body: object | None = None) -> object:
    """GET (or POST) `path` and return its JSON, or raise EndpointError saying what came back."""
    with httpx_errors(f"[{endpoint}] {method} {client.base_url}{path}"):
        response = client.request(method, path, json=json_body)
    return json_of(response, endpoint=endpoint, method=method, path=path)


def json_of(response: httpx.Response, *, endpoint: str, method: str, path: str) -> object:
    """The JSON of a 2xx answer, or EndpointError saying what came back (the status and the body's start; a body
    that is not JSON or nests too deep, `llmval.io.answers.parse_json`)."""
    if response.status_code >= 400:
        raise EndpointError(f"[{endpoint}] {method} {path}: HTTP {response.status_code}: {excerpt(response.text)}")
    return parse_json(response.text, f"[{endpoint}] {method} {path}: HTTP {response.status_code}")
