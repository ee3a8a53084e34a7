"""A whole run against a SYNTHESIZED server (httpx.MockTransport): k·C requests, warmup, prompts, failures."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from llmval.engines import VllmAdapter
from llmval.load import Workload, run_load

from .fakes import FakeClock, TimedStream

BOS = 1


class FakeServer:
    """/tokenize, /detokenize, /metrics and streaming /v1/completions; one token per word, BOS added."""

    def __init__(self, clock: FakeClock, *, fail_every: int = 0, foreign_tokens: int = 0, tokens_per_chunk: int = 1):
        self.clock = clock
        self.fail_every = fail_every
        self.foreign_tokens = foreign_tokens
        self.tokens_per_chunk = tokens_per_chunk
        self.generated = 0
        self.completions: list[dict] = []
        self.vocab: dict[str, int] = {}

    def _ids(self, text: str) -> list[int]:
        return [self.vocab.setdefault(w, len(self.vocab) + 10) for w in text.split()]

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/metrics":
            self.generated += self.foreign_tokens  # someone else's traffic between two scrapes
            return httpx.Response(200, text=f'vllm:generation_tokens_total{{engine="0"}} {self.generated}\n'
                                            'vllm:num_requests_running{engine="0"} 0\n'
                                            'vllm:num_requests_waiting{engine="0"} 0\n'
                                            'vllm:kv_cache_usage_perc{engine="0"} 0.25\n'
                                            'vllm:num_preemptions_total{engine="0"} 0\n'
                                            'vllm:prefix_cache_queries_total{engine="0"} 0\n'
                                            'vllm:prefix_cache_hits_total{engine="0"} 0\n')
        body = json.loads(request.content)
        if path == "/tokenize":
            ids = self._ids(body["prompt"])
            return httpx.Response(200, json={"tokens": ([BOS] if body.get("add_special_tokens", True) else []) + ids})
        if path == "/detokenize":
            words = {v: k for k, v in self.vocab.items()}
            return httpx.Response(200, json={"prompt": " ".join(words[t] for t in body["tokens"])})
        assert path == "/v1/completions"
        self.completions.append(body)
        if self.fail_every and len(self.completions) % self.fail_every == 0:
            return httpx.Response(500, json={"error": "boom"})
        n = body["max_tokens"]
        self.generated += n
        start = self.clock.now
        chunks = [(start + 0.05 + 0.01 * i, json.dumps({"choices": [{"text": " x", "index": 0}]}))
                  for i in range(0, n, self.tokens_per_chunk)]
        usage = {"choices": [], "usage": {"prompt_tokens": len(self._ids(body["prompt"])) + 1, "completion_tokens": n}}
        events = [*chunks, (chunks[-1][0], json.dumps(usage)), (chunks[-1][0], "[DONE]")]
        pieces = [(at, f"data: {data}\n\n".encode()) for at, data in events]
        sse = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=sse, stream=TimedStream(pieces, self.clock))


def _run(server: FakeServer, workload: Workload, nonce: str = "run1"):
    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(server.handle), base_url="http://fake") as client:
            return await run_load(client, workload, endpoint="fake", engine=VllmAdapter, nonce=nonce,
                                  clock=server.clock)
    return asyncio.run(go())


WORKLOAD = Workload(model="m", input_len=32, output_len=8, concurrency=3, num_requests=12, warmup_requests=3)


def test_run_sends_warmup_then_k_times_c_requests_and_measures_only_those():
    server = FakeServer(FakeClock())
    run = _run(server, WORKLOAD)
    assert (len(server.completions), len(run.warmup), len(run.records)) == (15, 3, 12)
    assert (run.metrics.completed, run.metrics.failed, run.metrics.total_output_tokens) == (12, 0, 96)


def test_prompts_have_exact_length_and_are_unique_per_request_and_run():
    server = FakeServer(FakeClock())
    first, second = _run(server, WORKLOAD, nonce="aaaa"), _run(server, WORKLOAD, nonce="bbbb")
    prompts = [c["prompt"] for c in server.completions]
    assert len(set(prompts)) == len(prompts) == 30
    assert {r.prompt_tokens for r in [*first.records, *second.records]} == {32}
    assert len({p.split()[0] for p in prompts}) == 30  # distinct from the first token: no shared cache block


def test_payload_pins_temperature_ignores_eos_and_asks_for_usage():
    server = FakeServer(FakeClock())
    _run(server, Workload(model="m", input_len=16, output_len=4, concurrency=1, num_requests=2, warmup_requests=0,
                          temperature=0.7))
    body = server.completions[0]
    assert (body["temperature"], body["ignore_eos"], body["stream"], body["stream_options"], body["max_tokens"]) == (
        0.7, True, True, {"include_usage": True}, 4)


def test_failed_requests_are_counted_not_dropped():
    server = FakeServer(FakeClock(), fail_every=4)
    run = _run(server, WORKLOAD)
    # completions #4, #8 and #12 of 15 fail; #1-#3 are the warmup, so all three failures are measured ones
    assert (run.metrics.failed, run.metrics.completed) == (3, 9)
    assert all(e.startswith("HTTP 500") for e in run.errors)


def test_tokens_come_from_usage_when_chunks_carry_several_tokens():
    server = FakeServer(FakeClock(), tokens_per_chunk=4)
    run = _run(server, WORKLOAD)
    assert {r.output_tokens for r in run.records} == {8}
    assert {r.chunks for r in run.records} == {2}


def test_other_traffic_in_the_window_is_reported():
    run = _run(FakeServer(FakeClock(), foreign_tokens=50), WORKLOAD)
    assert run.foreign_tokens == 50
    assert _run(FakeServer(FakeClock()), WORKLOAD).foreign_tokens == 0


def test_too_short_input_is_a_clear_error():
    from llmval.core.errors import EndpointError
    with pytest.raises(EndpointError, match="too short"):
        _run(FakeServer(FakeClock()), Workload(model="m", input_len=3, output_len=2, concurrency=1, num_requests=1,
                                                warmup_requests=0))
