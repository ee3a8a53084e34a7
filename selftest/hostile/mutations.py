"""Hostile answers for the server-answer fuzzer: a seeded choice, path by path, of how the HostileServer answers.

`fuzzed_routes(rng, key)` keeps most paths answering as vLLM does (so later checks are reached) and turns the
others into one of: an error status whose body echoes the API key after random padding (raw, base64 of its
Authorization header, URL-quoted, cut), the valid JSON with a random node replaced by junk (wrong types, NUL/ESC,
70k strings, 2^64, nested 100,000 deep), bytes that are not JSON or not UTF-8, valid JSON cut short, a body shorter
than its Content-Length, headers then a trickle, and for the streamed chat, event streams with junk events, no
[DONE], or one event every 0.3 s, or one of the lying streams of `streams.LIES` (issue 42). Everything is
SYNTHESIZED; the shapes of the valid answers are vLLM's.
"""

from __future__ import annotations

import base64
import copy
import json
import random
import urllib.parse
from http.server import BaseHTTPRequestHandler

from selftest.hostile.server import MODEL, VLLM_ROUTES, Route, answer, chat_completion, sse, trickle
from selftest.hostile.streams import LIES

VALID = {
    "/version": {"version": "0.32.0"},
    "/v1/models": {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "vllm", "root": MODEL,
                                               "max_model_len": 8192}]},
    "/v1/chat/completions": chat_completion(),
}
METRICS = ("# HELP vllm:num_requests_running Number of requests running.\n# TYPE vllm:num_requests_running gauge\n"
           f'vllm:num_requests_running{{model_name="{MODEL}"}} 0.0\n')
PATHS = ("/health", "/version", "/v1/models", "/v1/chat/completions", "/metrics", "/server_info")


def _deep(n: int = 100_000) -> str:
    return "[" * n + "]" * n


def junk(rng: random.Random) -> object:
    return rng.choice([None, True, 0, -1, 2**64, 1e308, "", "abc", "x" * 70_000, "\x00\x1b[31mred\x07\x00",
                       "0\x001\x00", [], {}, ["m"], [[[]]], {"id": None}, {"data": "x"}, "![x](http://e/t.png)",
                       "<script>alert(1)</script>", "\n## Heading", "\u202eevil"])


def _nodes(value: object, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _nodes(item, (*path, index))
    return found


def mutate_json(rng: random.Random, value: object) -> object:
    """`value` with one random node replaced by junk, deleted, or the whole replaced."""
    value = copy.deepcopy(value)
    path = rng.choice(_nodes(value))
    if not path:
        return junk(rng)
    parent = value
    for part in path[:-1]:
        parent = parent[part]  # type: ignore[index]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[path[-1]]
    else:
        parent[path[-1]] = junk(rng)  # type: ignore[index]
    return value


def echoed_key(rng: random.Random, key: str) -> str:
    """The key as a server may echo it: raw, in the Authorization header's base64, URL-quoted, or cut short."""
    form = rng.choice(["raw", "bearer-b64", "quoted", "prefix", "suffix"])
    if form == "bearer-b64":
        return base64.b64encode(f"Bearer {key}".encode()).decode()
    if form == "quoted":
        return urllib.parse.quote(f"Bearer {key}")
    if form == "prefix":
        return key[:rng.randint(9, len(key))]
    if form == "suffix":
        return key[-rng.randint(9, len(key)):]
    return key


def _truncated(body: bytes) -> Route:
    def route(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body) + 100))
        request.end_headers()
        request.wfile.write(body)
        request.close_connection = True

    return route


def _chunks_route(events: list[object], every_s: float, done: bool) -> Route:
    streaming = sse(events, every_s=every_s, done=done)

    def route(request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length)
        if b'"stream": true' in body or b'"stream":true' in body:
            streaming(request)
        else:
            answer(chat_completion())(request)

    return route


def fuzzed_route(rng: random.Random, path: str, key: str) -> tuple[Route, str]:
    """One hostile answer for `path` and what it is."""
    valid = VALID.get(path)
    kind = rng.choice(["status", "shape", "bytes", "cut-json", "short-body", "trickle", "stream"])
    if kind == "status":
        status = rng.choice([400, 401, 403, 404, 500, 503])
        pad = "x" * rng.randint(0, 400)
        return answer({"detail": f"{pad} {echoed_key(rng, key)} rejected"}, status=status), f"{status}+key"
    if kind == "shape" and valid is not None:
        mutated = mutate_json(rng, valid)
        text = _deep() if rng.random() < 0.15 else json.dumps(mutated)
        return answer(text), f"shape:{text[:60]!r}"
    if kind == "bytes":
        data = rng.choice([b"\xff\xfe\x00garbage", b"<html>\x1b[2J</html>", bytes(rng.randrange(256) for _ in
                                                                                        range(rng.randint(0, 64)))])
        return answer(data), f"bytes:{data[:20]!r}"
    if kind == "cut-json" and valid is not None:
        text = json.dumps(valid)
        return answer(text[:rng.randint(0, len(text) - 1)]), "cut-json"
    if kind == "short-body":
        return _truncated(json.dumps(valid or {}).encode()), "short-body"
    if kind == "trickle":
        return trickle(json.dumps(valid or {}).encode() or b"{}", every_s=0.3), "trickle"
    if kind == "stream" and path == "/v1/chat/completions" and rng.random() < 0.3:  # a stream that lies (issue 42)
        lie = rng.choice(sorted(LIES))
        return _chunks_route(list(LIES[lie].events("chat", rng.randint(2, 16))), every_s=0.0, done=False), \
            f"stream-lie:{lie}"
    if kind == "stream" and path == "/v1/chat/completions":
        events: list[object] = [rng.choice(["not json", "[1,2]", '{"choices": "abc"}', '{"error": {"k": 1}}',
                                            json.dumps({"choices": [{"delta": {"content": "x"}}]})])
                                for _ in range(rng.randint(0, 5))]
        slow = rng.random() < 0.3
        return _chunks_route(events, every_s=0.3 if slow else 0.0, done=rng.random() < 0.5), \
            f"stream{'-slow' if slow else ''}:{len(events)}"
    return VLLM_ROUTES.get(path, answer(METRICS, content_type="text/plain")), "valid"


def fuzzed_routes(rng: random.Random, key: str, hostile_share: float = 0.4) -> tuple[dict[str, Route], dict]:
    """Routes for every path the smoke contract reads, about `hostile_share` of them hostile; and what each is."""
    routes: dict[str, Route] = {"/metrics": answer(METRICS, content_type="text/plain")}
    said = {}
    for path in PATHS:
        if rng.random() < hostile_share:
            routes[path], said[path] = fuzzed_route(rng, path, key)
    return routes, said

