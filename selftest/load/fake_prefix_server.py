"""A SYNTHESIZED chat server with a known prefix cache, for the agentic load's self-tests (no engine).

Tokens are the words of each message's role, content and tool calls, in order (so a conversation that grows by
messages grows by tokens at its end). Every prompt is looked up in a cache of all earlier prompts in blocks of
`block` tokens, as vLLM's prefix cache does: the hit is the longest common prefix with any earlier prompt, rounded
down to whole blocks. `/metrics` exposes the queried and hit totals under vLLM's names, so the load's hit rate can
be compared with the truth kept here. The first token waits `per_token_s` per uncached token.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def tokens_of(messages: list[dict]) -> list[str]:
    out: list[str] = []
    for m in messages:
        out += [f"<{m['role']}>", *str(m.get("content") or "").split(), *json.dumps(m.get("tool_calls", "")).split()]
    return out


class PrefixCache:
    def __init__(self, block: int = 4):
        self.block = block
        self.prompts: list[list[str]] = []
        self.queried = 0
        self.hits = 0
        self.requests: list[dict] = []
        self.lock = threading.Lock()

    def lookup(self, tokens: list[str]) -> int:
        with self.lock:
            best = 0
            for old in self.prompts:
                n = 0
                for a, b in zip(old, tokens, strict=False):
                    if a != b:
                        break
                    n += 1
                best = max(best, n)
            hit = best // self.block * self.block
            self.prompts.append(tokens)
            self.queried += len(tokens)
            self.hits += hit
            return hit


@contextmanager
def prefix_server(*, block: int = 4, per_token_s: float = 0.0, fail_turn: int | None = None,
                  caching: bool = True, hits_factor: float = 1.0) -> Iterator[tuple]:
    """Serve on a free loopback port; yields (base URL, the cache). `fail_turn`: answer HTTP 400 to every prompt
    holding that many tool results or more (a context-length refusal). `caching=False`: prefix caching off, as vLLM
    with --no-enable-prefix-caching (REAL, 0.32.0 CPU: both counters exposed and never growing). `hits_factor`:
    the hit counter multiplied by it (a server that lies: 3 reports "900 of 300 tokens")."""
    cache = PrefixCache(block)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            return

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            text = (f'vllm:prefix_cache_queries_total{{engine="0"}} {cache.queried}\n'
                    f'vllm:prefix_cache_hits_total{{engine="0"}} {cache.hits * hits_factor}\n'
                    'vllm:num_requests_running{engine="0"} 0\nvllm:num_requests_waiting{engine="0"} 0\n'
                    'vllm:kv_cache_usage_perc{engine="0"} 0.1\nvllm:num_preemptions_total{engine="0"} 0\n')
            self._send(200, text.encode(), "text/plain")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            cache.requests.append(body)
            messages = body["messages"]
            if fail_turn is not None and sum(m["role"] == "tool" for m in messages) >= fail_turn:
                return self._send(400, b'{"error": "maximum context length"}', "application/json")
            tokens = tokens_of(messages)
            hit = cache.lookup(tokens) if caching else 0
            time.sleep(per_token_s * (len(tokens) - hit))
            n = body["max_tokens"]
            events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
            events += [{"choices": [{"index": 0, "delta": {"content": " x"}}]} for _ in range(n)]
            events.append({"choices": [], "usage": {"prompt_tokens": len(tokens), "completion_tokens": n}})
            sse = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
            self._send(200, sse, "text/event-stream")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", cache
    finally:
        server.shutdown()
        server.server_close()
