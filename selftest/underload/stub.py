"""A SYNTHESIZED vLLM-shaped server on loopback for the correctness-under-load self-tests (no engine, no model).

Shapes follow vLLM's OpenAI server as the suite's recordings show them: `POST /tokenize` (chat `messages` or a
`prompt`; one token per whitespace word, no special tokens), streamed `POST /v1/completions` (one chunk per token,
`chunk_s` apart, chunked transfer encoding, a usage chunk, `[DONE]`), non-streamed `POST /v1/chat/completions`,
and `/metrics` with vLLM's running/waiting gauge names (streams and chats in progress).

Its "model" answers a NIAH question with the value planted for the asked key, and a tool-call request with the
calls the catalogue expects (`expected_calls`: user prompt -> [(name, arguments)]). `fault` turns it wrong only
while completion streams are in flight (under load): `niah` answers another number, `values` changes an argument
value, `invalid` returns arguments that are a JSON string, not an object. `refuse_load` answers every completion
with HTTP 503, so a load can never be held."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from llmval.toolcalls import build_catalogue

NEEDLE_RE = re.compile(r"for (?P<key>[\w-]+) is: (?P<value>\d{7})\.")
QUESTION_RE = re.compile(r"magic number for (?P<key>[\w-]+) mentioned")


@dataclass
class StubState:
    model: str = "stub"
    chunk_s: float = 0.01
    fault: str = ""
    refuse_load: bool = False
    expected_calls: dict[str, list[tuple[str, dict]]] = field(default_factory=dict)
    streams: int = 0
    chats: int = 0
    generated: int = 0
    chats_under_load: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _niah_answer(content: str, corrupt: bool) -> str:
    asked = QUESTION_RE.search(content)
    planted = {m["key"]: m["value"] for m in NEEDLE_RE.finditer(content)}
    value = planted.get(asked["key"], "0000000") if asked else "0000000"
    if corrupt:
        value = value[:-1] + str((int(value[-1]) + 1) % 10)
    return f"The special magic number is {value}."


def _changed(arguments: dict, schema: dict) -> dict:
    """The arguments with one value changed to another the schema still allows (another enum member, a longer
    string, the next integer): still valid, no longer the expected values."""
    properties = schema.get("properties", {})
    key = sorted(arguments)[0]
    value, allowed = arguments[key], properties.get(key, {}).get("enum")
    if allowed:
        changed = allowed[(allowed.index(value) + 1) % len(allowed)]
    else:
        changed = value + 1 if isinstance(value, int) else f"{value}x" if isinstance(value, str) else value
    return {**arguments, key: changed}


def _tool_answer(state: StubState, body: dict, corrupt: bool) -> dict:
    prompt = body["messages"][-1]["content"]
    calls = state.expected_calls.get(prompt, [])
    out = []
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    for i, (name, arguments) in enumerate(calls):
        args = _changed(arguments, schemas[name]) if corrupt and state.fault == "values" else arguments
        raw = json.dumps(json.dumps(args)) if corrupt and state.fault == "invalid" else json.dumps(args)
        call = {"id": f"call-{i}", "type": "function", "function": {"name": name, "arguments": raw}}
        if corrupt and state.fault == "envelope":  # the call an OpenAI client cannot answer: no id, no type
            call = {"function": call["function"]}
        out.append(call)
    return {"role": "assistant", "content": None, "tool_calls": out}


def _handler(state: StubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            return

        def _send(self, status: int, payload: object, content_type: str = "application/json") -> None:
            body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/metrics":
                with state.lock:
                    running, generated = state.streams + state.chats, state.generated
                label = f'{{model_name="{state.model}"}}'
                text = (f"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{label} {running}.0\n"
                        f"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{label} 0.0\n"
                        f"# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total{label} {generated}.0\n")
                return self._send(200, text.encode(), "text/plain; version=0.0.4")
            if self.path == "/health":
                return self._send(200, b"")
            if self.path == "/v1/models":
                return self._send(200, {"data": [{"id": state.model, "max_model_len": 8192}]})
            return self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path == "/tokenize":
                text = body.get("prompt") or " ".join(str(m.get("content") or "") for m in body.get("messages", []))
                tokens = list(range(len(text.split())))
                return self._send(200, {"count": len(tokens), "tokens": tokens, "max_model_len": 8192})
            if self.path == "/v1/completions":
                return self._stream(body)
            if self.path == "/v1/chat/completions":
                return self._chat(body)
            return self._send(404, {"error": "not found"})

        def _chat(self, body: dict) -> None:
            with state.lock:
                state.chats += 1
                under_load = state.streams > 0
                state.chats_under_load += under_load
            try:
                corrupt = under_load and bool(state.fault)
                time.sleep(0.02)
                if body.get("tools"):
                    message = _tool_answer(state, body, corrupt)
                    finish = "tool_calls"
                else:
                    content = body["messages"][-1]["content"]
                    message = {"role": "assistant",
                               "content": _niah_answer(content, corrupt and state.fault == "niah")}
                    finish = "stop"
                self._send(200, {"id": "chatcmpl-stub", "object": "chat.completion", "model": state.model,
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22}})
            finally:
                with state.lock:
                    state.chats -= 1

        def _stream(self, body: dict) -> None:
            if state.refuse_load:
                return self._send(503, {"error": "overloaded"})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def event(data: str) -> None:
                piece = f"data: {data}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()

            n = int(body.get("max_tokens", 16))
            with state.lock:
                state.streams += 1
            try:
                for _ in range(n):
                    time.sleep(state.chunk_s)
                    event(json.dumps({"id": "cmpl-stub", "choices": [{"index": 0, "text": " x",
                                                                        "finish_reason": None}]}))
                    with state.lock:
                        state.generated += 1
                event(json.dumps({"id": "cmpl-stub", "choices": [],
                                  "usage": {"prompt_tokens": len(body.get("prompt", "").split()),
                                            "completion_tokens": n, "total_tokens": n}}))
                event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client cut the stream (the load stopped)
            finally:
                with state.lock:
                    state.streams -= 1

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the load's prompts are calibrated with many /tokenize calls at once


@contextmanager
def stub_server(state: StubState) -> Iterator[str]:
    """Serve `state` on a free loopback port; yields the base URL."""
    server = _Server(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


CATEGORIES = ["flat", "enum", "bigint"]  # the tool-call categories the self-tests probe


def stub_state(**kwargs) -> StubState:
    """A stub's state that knows the expected calls of one catalogue case per category of CATEGORIES."""
    state = StubState(**kwargs)
    for case in build_catalogue(cases_per_category=1, categories=tuple(CATEGORIES)):
        body = case.request(strict=True, tool_choice="required")
        state.expected_calls[body["messages"][-1]["content"]] = [(e.name, e.arguments) for e in case.expected]
    return state
