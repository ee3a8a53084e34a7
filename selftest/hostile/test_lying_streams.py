"""One reading of every stream (issue 42.2, 42.3): each lying stream of `streams.LIES` fails every reader of the
suite, naming the same fault, and each honest control of `streams.HONEST` reads as the tokens it generated.

The readers: the perf gates' wire client (`llmval.load.WireClient`, completions and the agentic load's chat form,
over a real socket), the load's httpx path (`llmval.load.stream_completion`) and the chat checks' join
(`llmval.engines.join_chat_stream`, as `EngineAdapter.chat_stream` reads the bytes). Before issue 42 `[DONE]` ended
the join but not the load's reading, and usage x10 made a C=1 decode of 49.2 tok/s read 555.3 tok/s.
"""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmval.core.errors import ParseError
from llmval.engines import join_chat_stream
from llmval.io.sse import data_events
from llmval.load import WireClient, stream_completion
from selftest.hostile.server import HostileServer, answer
from selftest.hostile.streams import HONEST, LIES, MAX_TOKENS, render

N = 16
PAYLOAD = {"model": "smollm2", "prompt": "p", "max_tokens": MAX_TOKENS, "stream": True,
           "stream_options": {"include_usage": True}}
CHAT = {"model": "smollm2", "messages": [{"role": "user", "content": "p"}], "max_tokens": MAX_TOKENS,
        "stream": True, "stream_options": {"include_usage": True}}
FORMS = {"completion": ("/v1/completions", PAYLOAD), "chat": ("/v1/chat/completions", CHAT)}


def _wire(form: str, events: list[str], *, crlf: bool = False):
    path, payload = FORMS[form]
    route = answer(render(events, crlf=crlf), content_type="text/event-stream")
    with HostileServer({path: route}) as server:
        async def one():
            async with WireClient(server.base_url, timeout_s=10) as client:
                return await client.stream(payload, path=path)

        return asyncio.run(one())


def _httpx(form: str, events: list[str]):
    path, payload = FORMS[form]
    body = render(events)

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              stream=httpx.ByteStream(body))

    async def one():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://fake") as client:
            return await stream_completion(client, payload, path=path)

    return asyncio.run(one())


def _join(events: list[str]):
    return join_chat_stream(data_events([render(events)]), max_tokens=MAX_TOKENS)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("lie", LIES)
def test_a_lying_stream_fails_the_wire_client_and_the_httpx_path_naming_the_lie(lie, form):
    events = LIES[lie].events(form, N)
    for reader, record in (("wire", _wire(form, events)), ("httpx", _httpx(form, events))):
        assert not record.success, (reader, record)
        assert LIES[lie].said in record.error, (reader, record.error)
        assert "Traceback" not in record.error


@pytest.mark.parametrize("lie", LIES)
def test_a_lying_chat_stream_is_refused_by_the_join_naming_the_lie(lie):
    with pytest.raises(ParseError, match=LIES[lie].said.replace("[", r"\[").replace("]", r"\]")):
        _join(LIES[lie].events("chat", N))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("shape", HONEST)
def test_an_honest_stream_reads_as_the_tokens_it_generated_in_every_reader(shape, form):
    events = HONEST[shape].events(form, N)
    for reader, record in (("wire", _wire(form, events)), ("wire-crlf", _wire(form, events, crlf=True)),
                           ("httpx", _httpx(form, events))):
        assert record.success, (reader, record.error)
        assert (record.output_tokens, record.unverified_count) == (N, ""), reader
    if form == "chat":
        joined = _join(events)
        assert (joined.usage["completion_tokens"], joined.fault) == (N, "")
        assert joined.counts.gap(MAX_TOKENS) == ""


def test_a_lie_fails_the_perf_run_as_could_not_check_never_a_measurement():
    """usage x10 behind the load generator: the run raises UnverifiedTokenCount (could not check), no rate."""
    from llmval.load import UnverifiedTokenCount, unverified_counts

    records = [_wire("completion", LIES["usage-x10"].events("completion", N)) for _ in range(2)]
    records.append(_wire("completion", HONEST["one-token-chunks"].events("completion", N)))
    with pytest.raises(UnverifiedTokenCount, match=r"2 of 3 streams .* above the request's max_tokens 64"):
        unverified_counts(records, "[hostile] the measured window")


def _recorded_streams() -> list:
    """Every event stream the replays under selftest/data recorded (REAL: vLLM 0.24.0 on the H200, SGLang 0.5.17
    on the H200 with its tool-call streams that abort after the name, the local engine; SYNTHESIZED: kpro6)."""
    import base64
    import json

    from selftest.strategies import ROOT

    found = []
    for path in sorted((ROOT / "selftest" / "data" / "replays").glob("*/http-*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if "event-stream" in str(record.get("headers")) and record.get("body_b64"):
                found.append(pytest.param(base64.b64decode(record["body_b64"]),
                                          json.loads(record["request_body"]).get("max_tokens"),
                                          id=f"{path.parent.name}-{len(found)}"))
    return found


@pytest.mark.parametrize(("body", "max_tokens"), _recorded_streams())
def test_every_recorded_stream_reads_whole_and_its_usage_is_believed(body, max_tokens):
    from llmval.io.sse import OpenAIStream

    reader = OpenAIStream()
    for data in data_events([body]):
        reader.read(data)
    reader.end()
    assert reader.counts.gap(max_tokens) == "", reader.counts
    assert join_chat_stream(data_events([body]), max_tokens=max_tokens).fault == ""


@given(shape=st.sampled_from(sorted({**HONEST, **LIES})), form=st.sampled_from(sorted(FORMS)),
       crlf=st.booleans(), cuts=st.lists(st.integers(min_value=1, max_value=4000), max_size=30))
def test_the_one_sse_reader_splits_events_alike_however_the_bytes_arrive(shape, form, crlf, cuts):
    """SseSplitter (every reader's splitter) gives the same events for any cutting of the bytes, CR, LF or CRLF."""
    events = {**HONEST, **LIES}[shape].events(form, N)
    wire = render(events, crlf=crlf)
    bounds = sorted({0, *(c for c in cuts if c < len(wire)), len(wire)})
    pieces = [wire[a:b] for a, b in itertools.pairwise(bounds)]
    assert list(data_events(pieces)) == [e.encode() for e in events]


def test_no_module_reads_an_event_stream_but_the_one_reader():
    """The class, not the cases: no module of llmval but `llmval.io.sse` holds the `[DONE]` or `data:` literals a
    reader needs (the calibration source writes streams, it reads none), and none imports an SSE library (httpx-sse
    was one, and is no longer a dependency)."""
    import ast

    from selftest.strategies import ROOT

    reader_words = {"[DONE]", b"[DONE]", "data:", b"data:", "data: ", b"data: "}
    offenders = []
    for path in sorted((ROOT / "src" / "llmval").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in ("src/llmval/io/sse.py", "src/llmval/bench/_source.py"):
            continue
        tree = ast.parse(path.read_text())
        offenders += [f"{name}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and node.value in reader_words]
        offenders += [f"{name}:{node.lineno}: imports {module}" for node in ast.walk(tree)
                      for module in ([a.name for a in node.names] if isinstance(node, ast.Import)
                                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                      if module.split(".")[0] in ("httpx_sse", "sseclient", "aiohttp_sse_client")]
    assert offenders == []
