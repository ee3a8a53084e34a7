"""The calibration source: a reference OpenAI-compatible stream whose timing is known exactly.

A measuring instrument is calibrated against a reference whose truth is known. This server answers
`/v1/completions` and `/v1/chat/completions` (streaming or not) with a stream scheduled exactly: the
first chunk at `ttft_s` after the request arrived, then one chunk every `interval_s`; the first chunk
carries one token (the prefill's), every later chunk `tokens_per_chunk` (more than one models
speculative decoding: EAGLE/MTP chunks of several tokens); the stream ends with `usage` in its final
chunk, then `[DONE]`. A request's `max_tokens` sets its output length (default `output_len`).

Chunk k is due at `arrival + ttft_s + k * interval_s`, an absolute time on the event loop's monotonic
clock (`loop.call_at`), so lateness never accumulates the way chained sleeps drift. Chunk bytes are
built once per shape and reused (no per-event JSON encoding). `GET /calibration` returns the schedule
and how late the loop actually sent chunks (the source's own error, to tell it from the client's);
`PUT /calibration` (a JSON schedule) changes it between runs.

It is a reference for the suite's own instruments (`python -m llmval bench --calibrated`), never a
stand-in for a deployment: the contract tests keep running against real engines.

    python -m llmval.bench._source --port 8399 --ttft-ms 200 --interval-ms 20 --tokens-per-chunk 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace

from ..core.errors import ParseError
from ..core.jsontext import read_json

MODEL = "calibration-source"


@dataclass(frozen=True)
class Schedule:
    """When chunks are sent and how many tokens each carries (seconds, relative to the request's arrival)."""

    ttft_s: float = 0.2
    interval_s: float = 0.02
    tokens_per_chunk: int = 1
    output_len: int = 64
    """Output tokens when the request does not say (`max_tokens`)."""

    def __post_init__(self) -> None:
        if self.ttft_s < 0 or self.interval_s <= 0:
            raise ValueError(f"ttft_s must be >= 0 and interval_s > 0, got {self.ttft_s}, {self.interval_s}")
        if self.tokens_per_chunk < 1 or self.output_len < 1:
            raise ValueError(f"tokens_per_chunk and output_len must be >= 1, got {self.tokens_per_chunk}, "
                             f"{self.output_len}")

    def chunk_tokens(self, output_len: int) -> list[int]:
        """Tokens per chunk for one request: 1 (prefill), then `tokens_per_chunk` each, the last one the rest.

        >>> Schedule(tokens_per_chunk=3).chunk_tokens(8)
        [1, 3, 3, 1]
        """
        rest = output_len - 1
        full, tail = divmod(rest, self.tokens_per_chunk)
        return [1] + [self.tokens_per_chunk] * full + ([tail] if tail else [])

    def chunk_offsets_s(self, output_len: int) -> list[float]:
        """Due time of each chunk after the request's arrival (exact multiples, never summed gaps)."""
        return [self.ttft_s + k * self.interval_s for k in range(len(self.chunk_tokens(output_len)))]

    def truth(self, *, output_len: int, concurrency: int, num_requests: int) -> Truth:
        """What a perfect client measures, with `vllm bench serve`'s definitions (all requests alike)."""
        chunks = len(self.chunk_tokens(output_len))
        e2el_s = self.ttft_s + (chunks - 1) * self.interval_s
        tpot_s = (e2el_s - self.ttft_s) / (output_len - 1) if output_len > 1 else 0.0
        waves = math.ceil(num_requests / concurrency)  # rate inf + semaphore: waves of C requests in lockstep
        return Truth(ttft_ms=self.ttft_s * 1000, tpot_ms=tpot_s * 1000, itl_ms=self.interval_s * 1000,
                     e2el_ms=e2el_s * 1000, decode_tok_s=1 / tpot_s if tpot_s else 0.0,
                     output_throughput=num_requests * output_len / (waves * e2el_s),
                     events_per_s=min(concurrency, num_requests) / self.interval_s)

    def rate_truth(self, *, output_len: int, num_requests: int, rate: float) -> Truth:
        """What a perfect client measures at request rate `rate`, arrivals drawn as `vllm bench serve` draws them
        (`llmval.load.vllm_offsets`: the last arrival at exactly N/R) with no cap reached: every request
        alike, so the last to arrive ends last and the run lasts N/R + one request's latency.

        >>> t = Schedule(ttft_s=0.1, interval_s=0.01, output_len=11).rate_truth(output_len=11, num_requests=10, rate=5)
        >>> round(t.output_throughput, 3), round(t.ttft_ms, 3), round(t.tpot_ms, 3)
        (50.0, 100.0, 10.0)
        """
        once = self.truth(output_len=output_len, concurrency=1, num_requests=1)
        duration_s = num_requests / rate + once.e2el_ms / 1000
        return replace(once, output_throughput=num_requests * output_len / duration_s,
                       events_per_s=len(self.chunk_tokens(output_len)) * num_requests / duration_s)


@dataclass(frozen=True)
class Truth:
    """The metrics a perfect client reports for a calibration run."""

    ttft_ms: float
    tpot_ms: float
    itl_ms: float
    e2el_ms: float
    decode_tok_s: float
    output_throughput: float
    events_per_s: float
    """Aggregate SSE chunks per second while all streams decode (concurrency / interval)."""


class _Frames:
    """Encoded HTTP chunked frames for SSE messages, built once per (endpoint, model, tokens, final)."""

    def __init__(self) -> None:
        self._cache: dict[tuple, bytes] = {}

    def chunk(self, chat: bool, model: str, tokens: int, first: bool, final: bool) -> bytes:
        key = (chat, model, tokens, first, final)
        frame = self._cache.get(key)
        if frame is None:
            text = " t" * tokens
            finish = "length" if final else None
            if chat:
                delta = {"role": "assistant", "content": text} if first else {"content": text}
                body = {"id": "chatcmpl-calibration", "object": "chat.completion.chunk", "created": 0,
                        "model": model, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                     "finish_reason": finish}]}
            else:
                body = {"id": "cmpl-calibration", "object": "text_completion", "created": 0, "model": model,
                        "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}]}
            frame = self._cache[key] = _framed(_sse(body))
            if len(self._cache) > 4096:  # bounded: shapes are few, models named by clients are not
                self._cache.clear()
        return frame


def _sse(body: dict | str) -> bytes:
    data = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


def _framed(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


_STREAM_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"
                b"transfer-encoding: chunked\r\n\r\n")
_DONE = _framed(_sse("[DONE]")) + b"0\r\n\r\n"


class Lateness:
    """How late the loop sent chunks compared with their due times (the source's own error)."""

    def __init__(self) -> None:
        self.events = 0
        self.max_s = 0.0
        self.over_1ms = 0

    def add(self, late_s: float) -> None:
        self.events += 1
        if late_s > self.max_s:
            self.max_s = late_s
        if late_s > 0.001:
            self.over_1ms += 1

    def as_json(self) -> dict:
        return {"events": self.events, "late_max_ms": self.max_s * 1000, "late_over_1ms": self.over_1ms}


class _Stream:
    """One scheduled response: a chain of `call_at` callbacks, one per chunk, on absolute due times."""

    __slots__ = ("arrival", "chat", "conn", "index", "model", "offsets", "prompt_tokens", "source", "stream",
                 "tokens")

    def __init__(self, conn: _Connection, source: CalibrationSource, *, chat: bool, model: str, output_len: int,
                 prompt_tokens: int, stream: bool, arrival: float):
        schedule = source.schedule
        self.conn, self.source, self.chat, self.model, self.stream = conn, source, chat, model, stream
        self.tokens = schedule.chunk_tokens(output_len)
        self.offsets = schedule.chunk_offsets_s(output_len)
        self.prompt_tokens, self.arrival, self.index = prompt_tokens, arrival, 0

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.stream:
            self.conn.write(_STREAM_HEAD)
            loop.call_at(self.arrival + self.offsets[0], self.tick)
        else:
            loop.call_at(self.arrival + self.offsets[-1], self.whole)

    def tick(self) -> None:
        loop = self.conn.loop
        if self.conn.transport is None:  # the client went away: stop scheduling
            return
        i = self.index
        due = self.arrival + self.offsets[i]
        self.source.lateness.add(loop.time() - due)
        final = i == len(self.tokens) - 1
        frame = self.source.frames.chunk(self.chat, self.model, self.tokens[i], i == 0, final)
        if final:
            usage = {"id": "cmpl-calibration", "object": "chat.completion.chunk" if self.chat else "text_completion",
                     "created": 0, "model": self.model, "choices": [], "usage": self._usage()}
            self.conn.write(frame + _framed(_sse(usage)) + _DONE)
            self.conn.finished()
            return
        self.conn.write(frame)
        self.index = i + 1
        loop.call_at(self.arrival + self.offsets[i + 1], self.tick)

    def whole(self) -> None:
        self.source.lateness.add(self.conn.loop.time() - self.arrival - self.offsets[-1])
        text = " t" * sum(self.tokens)
        choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
                  if self.chat else {"index": 0, "text": text, "finish_reason": "length"})
        body = {"id": "cmpl-calibration", "object": "chat.completion" if self.chat else "text_completion",
                "created": 0, "model": self.model, "choices": [choice], "usage": self._usage()}
        self.conn.respond(200, body)
        self.conn.finished()

    def _usage(self) -> dict:
        out = sum(self.tokens)
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": out,
                "total_tokens": self.prompt_tokens + out}


def _prompt_tokens(body: dict) -> int:
    """Whitespace words of the prompt (or token ids): the source has no tokenizer; only output is calibrated."""
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        return len(prompt) if all(isinstance(t, int) for t in prompt) else sum(len(str(p).split()) for p in prompt)
    if isinstance(prompt, str):
        return len(prompt.split())
    words = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        words += len(content.split()) if isinstance(content, str) else 0
    return words


class _Connection(asyncio.Protocol):
    """HTTP/1.1 with keep-alive, one request at a time (enough for OpenAI clients; no pipelining)."""

    def __init__(self, source: CalibrationSource):
        self.source = source
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next_request()

    def finished(self) -> None:
        self.busy = False
        if self.buffer:
            self._next_request()

    def respond(self, status: int, body: dict) -> None:
        payload = json.dumps(body).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
        self.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                   % (status, reason.encode(), len(payload), payload))

    def _next_request(self) -> None:
        head_end = self.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = self.buffer[:head_end].decode("latin-1")
        request_line, *header_lines = head.split("\r\n")
        length = 0
        for line in header_lines:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip() or 0)
        if len(self.buffer) < head_end + 4 + length:
            return
        body_bytes = self.buffer[head_end + 4: head_end + 4 + length]
        self.buffer = self.buffer[head_end + 4 + length:]
        arrival = self.loop.time()
        self.busy = True
        method, _, rest = request_line.partition(" ")
        path = rest.split(" ", 1)[0].split("?", 1)[0]
        self._handle(method, path, body_bytes, arrival)

    def _handle(self, method: str, path: str, body_bytes: bytes, arrival: float) -> None:
        source = self.source
        if method == "POST" and path in ("/v1/completions", "/v1/chat/completions"):
            try:
                body = read_json(body_bytes or b"{}", f"{method} {path}")
                output_len = int(body.get("max_tokens") or body.get("max_completion_tokens")
                                 or source.schedule.output_len)
                if output_len < 1:
                    raise ValueError("max_tokens must be >= 1")
            except (ParseError, ValueError, TypeError, AttributeError) as error:
                self.respond(400, {"error": {"message": f"bad request: {error}", "type": "BadRequestError"}})
                self.finished()
                return
            stream = _Stream(self, source, chat=path.endswith("chat/completions"), model=str(body.get("model", MODEL)),
                             output_len=output_len, prompt_tokens=_prompt_tokens(body),
                             stream=bool(body.get("stream")), arrival=arrival)
            stream.start(self.loop)
            return
        if method == "GET" and path in ("/health", "/v1/models", "/calibration"):
            answer = {"/health": {"status": "ok"},
                      "/v1/models": {"object": "list", "data": [{"id": MODEL, "object": "model",
                                                                 "owned_by": "llmval-calibration"}]},
                      "/calibration": {"schedule": asdict(source.schedule), **source.lateness.as_json()}}[path]
            self.respond(200, answer)
        elif method == "PUT" and path == "/calibration":
            try:
                source.schedule = replace(source.schedule, **read_json(body_bytes, "PUT /calibration"))
                source.lateness = Lateness()
            except (ParseError, ValueError, TypeError) as error:
                self.respond(400, {"error": {"message": f"bad schedule: {error}"}})
            else:
                self.respond(200, {"schedule": asdict(source.schedule)})
        else:
            self.respond(404, {"error": {"message": f"{method} {path}: not served by the calibration source"}})
        self.finished()


class CalibrationSource:
    """The reference server; `await source.start(port)` then `source.port`; `schedule` may change between runs."""

    def __init__(self, schedule: Schedule):
        self.schedule = schedule
        self.frames = _Frames()
        self.lateness = Lateness()
        self.server: asyncio.Server | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0, *, reuse_port: bool = False) -> int:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: _Connection(self), host, port, backlog=4096,
                                               reuse_port=reuse_port or None)
        return self.port

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()


@contextlib.contextmanager
def source_process(schedule: Schedule, *, port: int = 0, host: str = "127.0.0.1") -> Iterator[str]:
    """Run the source in its own process (its own core and GIL: the source must not be the bottleneck).

    Yields its base URL; the process is stopped on exit.
    """
    entry = "import sys; from llmval.bench._source import main; sys.exit(main())"
    argv = [sys.executable, "-c", entry, "--host", host, "--port", str(port),
            "--schedule", json.dumps(asdict(schedule))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening "):
            raise RuntimeError(f"calibration source did not start (rc {proc.poll()}): {line!r}")
        yield line.split()[1]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _serve(schedule: Schedule, host: str, port: int, *, reuse_port: bool = False, control: bool = False) -> None:
    source = CalibrationSource(schedule)
    await source.start(host, port, reuse_port=reuse_port)
    print(f"listening http://{host}:{source.port}", flush=True)
    if control:  # one JSON command per stdin line: {"schedule": {...}} sets it, {} asks; answers the lateness
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            command = read_json(line, "a control line")
            answer = source.lateness.as_json()
            if "schedule" in command:
                source.schedule = replace(source.schedule, **command["schedule"])
                source.lateness = Lateness()
            print(json.dumps(answer), flush=True)
        return
    await asyncio.Event().wait()


class SourceFleet:
    """`processes` calibration sources on one port (SO_REUSEPORT: the kernel spreads connections over them), so
    the source is never the bottleneck of a ceiling measurement; each process is steered over its stdin (a new
    schedule, its lateness), since HTTP would reach only one of them.

        with SourceFleet(schedule, processes=4) as fleet:
            fleet.set_schedule(replace(schedule, interval_s=0.004)); ...; fleet.lateness()
    """

    def __init__(self, schedule: Schedule, *, processes: int = 1, host: str = "127.0.0.1",
                 cpus: set[int] | None = None):
        self.schedule, self.host, self.processes = schedule, host, max(1, processes)
        self.cpus = cpus
        """The CPUs the sources run on (None: wherever this process may run), e.g. where the engine ran."""
        self.procs: list[subprocess.Popen] = []
        self.url = ""

    def _start(self, port: int) -> tuple[subprocess.Popen, str]:
        entry = "import sys; from llmval.bench._source import main; sys.exit(main())"
        argv = [sys.executable, "-c", entry, "--host", self.host, "--port", str(port), "--reuse-port", "--control",
                "--schedule", json.dumps(asdict(self.schedule))]
        cpus = self.cpus
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(),
                                preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus))
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening "):
            proc.kill()
            raise RuntimeError(f"calibration source did not start (rc {proc.poll()}): {line!r}")
        return proc, line.split()[1]

    def __enter__(self) -> SourceFleet:
        first, self.url = self._start(0)
        self.procs = [first]
        port = int(self.url.rsplit(":", 1)[1])
        try:
            self.procs += [self._start(port)[0] for _ in range(self.processes - 1)]
        except BaseException:
            self.close()
            raise
        return self

    def _ask(self, command: dict) -> list[dict]:
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(command) + "\n")
            proc.stdin.flush()
        return [read_json(proc.stdout.readline(), "a calibration source's answer")
                for proc in self.procs if proc.stdout is not None]

    def set_schedule(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self._ask({"schedule": asdict(schedule)})

    def lateness(self) -> dict:
        """The chunks sent since the last schedule, merged over the processes (events, max and over-1-ms counts)."""
        answers = self._ask({})
        return {"events": sum(a["events"] for a in answers), "late_max_ms": max(a["late_max_ms"] for a in answers),
                "late_over_1ms": sum(a["late_over_1ms"] for a in answers), "processes": len(answers)}

    def close(self) -> None:
        for proc in self.procs:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = []

    def __exit__(self, *exc: object) -> None:
        self.close()


def _env() -> dict[str, str]:
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmval.bench._source", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--schedule", help="the schedule as JSON (Schedule's fields)")
    parser.add_argument("--ttft-ms", type=float)
    parser.add_argument("--interval-ms", type=float)
    parser.add_argument("--tokens-per-chunk", type=int)
    parser.add_argument("--output-len", type=int)
    parser.add_argument("--reuse-port", action="store_true", help="share the port with other sources (SO_REUSEPORT)")
    parser.add_argument("--control", action="store_true", help="take schedules as JSON lines on stdin")
    args = parser.parse_args(argv)
    schedule = Schedule(**read_json(args.schedule, "--schedule")) if args.schedule else Schedule()
    overrides = {k: v for k, v in (("ttft_s", args.ttft_ms and args.ttft_ms / 1000),
                                   ("interval_s", args.interval_ms and args.interval_ms / 1000),
                                   ("tokens_per_chunk", args.tokens_per_chunk), ("output_len", args.output_len))
                 if v}
    schedule = replace(schedule, **overrides)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(schedule, args.host, args.port, reuse_port=args.reuse_port, control=args.control))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
