"""Loaded only by selftest/engines/synthesize.py: the contract's HTTP goes to the SYNTHESIZED SGLang of
fake_sglang.py and the engine-log command gets its synthesized journal, so `--record` writes a replay that holds
exactly the requests the contract makes. `<engine>:<variant>` from LLMVAL_SYNTH_SGLANG_VARIANT."""

from __future__ import annotations

import os

import httpx

from llmval.io import transport
from llmval.io.recording import CommandResult
from selftest.engines import fake_sglang, fake_vllm

VARIANT_ENV = "LLMVAL_SYNTH_SGLANG_VARIANT"
FAKES = {"sglang": fake_sglang, "vllm": fake_vllm}


class _Body(httpx.SyncByteStream):
    def __init__(self, body: bytes):
        self._body = body

    def __iter__(self):
        yield self._body


class _FakeTransport(httpx.BaseTransport):
    """Answers from the fake as a *streamed* body, so the recording layer sees it read and closed."""

    def __init__(self, handle):
        self._handle = handle

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self._handle(request)
        return httpx.Response(answer.status_code, headers=answer.headers, stream=_Body(answer.content))


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, body: bytes):
        self._body = body

    async def __aiter__(self):
        yield self._body


class _AsyncFakeTransport(httpx.AsyncBaseTransport):
    """The async twin (the streamed-completion checks use an async client)."""

    def __init__(self, handle):
        self._handle = handle

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        answer = self._handle(request)
        return httpx.Response(answer.status_code, headers=answer.headers, stream=_AsyncBody(answer.content))


def pytest_configure(config) -> None:
    engine, _, variant = os.environ[VARIANT_ENV].partition(":")
    fake = FAKES[engine]
    handle = fake.handler(variant)
    httpx.HTTPTransport = lambda *args, **kwargs: _FakeTransport(handle)  # type: ignore[misc]
    httpx.AsyncHTTPTransport = lambda *args, **kwargs: _AsyncFakeTransport(handle)  # type: ignore[misc]

    def run_live(self, command: str, timeout_s: float) -> CommandResult:
        if "journalctl" in command or "docker logs" in command or "/var/log/llmval/vllm-serve.log" in command:
            return CommandResult(self.name, command, 0, fake.startup_log(variant), "", 0.01)
        return CommandResult(self.name, command, 127, "", "synthesized host: command not known", 0.01)

    transport.Connection._run_live = run_live  # type: ignore[method-assign]
