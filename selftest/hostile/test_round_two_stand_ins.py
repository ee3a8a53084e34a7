"""Stand-ins the first round had not seen (issue 42, round two): framings of an event stream and answers whose token
counts are no counts. Each lie fails every reader naming it; each honest framing (an SSE spec's comment, `data:`
with no space, a named `message` event, CRLF, `[DONE]` with no blank line after it) reads as the tokens generated.

Before round two an `event: error` frame was read as data (its JSON, whatever it said, taken as a chunk), a usage
of `"16"` or `16.0` was dropped silently by the streams' reader and reached the tool-call judge as a string (a
TypeError on `>= max_tokens`), and a non-streamed usage of `-1`, `true` or `"16"` passed the answer's shape.
"""

from __future__ import annotations

import pytest

from llmval.core.errors import EndpointError, ParseError
from llmval.engines import join_chat_stream
from llmval.io.answers import ChatCompletion, checked
from llmval.io.sse import data_events
from selftest.hostile.streams import MAX_TOKENS, honest
from selftest.hostile.test_lying_streams import FORMS, N

FRAMING_LIES = {
    # a proxy or a server reporting its engine's failure mid-stream, then going on as if nothing happened
    "event-error-then-more": ("event: error\ndata: {\"message\": \"engine died\"}\n\n", "named 'error'"),
    # the same frame carrying a chunk of the answer: a named event is no data event, whatever it holds
    "event-error-with-choices": ("event: error\ndata: {\"choices\": [{\"index\": 0, \"text\": \"x\", "
                                 "\"delta\": {\"content\": \"x\"}, \"finish_reason\": null}]}\n\n", "named 'error'"),
    "event-of-another-protocol": ("event: response.output_text.delta\ndata: {\"delta\": \"x\"}\n\n",
                                  "named 'response.output_text.delta'"),
}
"""name -> (the raw frame put after the stream's second event, what every reader's reason names)."""


def _frames(form: str, inserted: str = "", *, crlf: bool = False, comment: bool = False, nospace: bool = False,
            named: bool = False, done_unframed: bool = False) -> list[str]:
    """An honest stream of N tokens as raw SSE frames, with `inserted` after its second event."""
    prefix = "data:" if nospace else "data: "
    frames = [("event: message\n" if named else "") + f"{prefix}{e}\n\n" for e in honest(form, N)]
    if comment:
        frames = [": ping\n\n" + f for f in frames]
    if done_unframed:
        frames[-1] = frames[-1].rstrip("\n")
    if inserted:
        frames.insert(2, inserted)
    text = "".join(frames)
    return [text.replace("\n", "\r\n") if crlf else text]


def _readers(form: str, raw: str):
    """(reader, record) of the wire client (over a real socket) and the load's httpx path, fed exactly `raw`."""
    import asyncio

    import httpx

    from llmval.load import WireClient, stream_completion
    from selftest.hostile.server import HostileServer, answer

    path, payload = FORMS[form]
    with HostileServer({path: answer(raw.encode(), content_type="text/event-stream")}) as server:
        async def over_the_wire():
            async with WireClient(server.base_url, timeout_s=10) as client:
                return await client.stream(payload, path=path)

        wire = asyncio.run(over_the_wire())

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=httpx.ByteStream(raw.encode()))

    async def through_httpx():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://fake") as client:
            return await stream_completion(client, payload, path=path)

    return [("wire", wire), ("httpx", asyncio.run(through_httpx()))]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("lie", FRAMING_LIES)
def test_a_named_event_fails_every_reader_naming_it(lie, form):
    frame, said = FRAMING_LIES[lie]
    raw = _frames(form, frame)[0]
    for reader, record in _readers(form, raw):
        assert not record.success, (reader, record)
        assert said in record.error and "Traceback" not in record.error, (reader, record.error)
    if form == "chat":
        with pytest.raises(ParseError, match=said):
            join_chat_stream(data_events([raw.encode()]), max_tokens=MAX_TOKENS)


HONEST_FRAMINGS = {"comments": {"comment": True}, "data-without-a-space": {"nospace": True},
                   "named-message-events": {"named": True}, "crlf": {"crlf": True},
                   "done-without-a-blank-line": {"done_unframed": True},
                   "all-at-once": {"comment": True, "nospace": True, "named": True, "crlf": True}}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("framing", HONEST_FRAMINGS)
def test_an_honest_framing_reads_as_the_tokens_generated_in_every_reader(framing, form):
    raw = _frames(form, **HONEST_FRAMINGS[framing])[0]
    for reader, record in _readers(form, raw):
        assert record.success, (reader, record.error)
        assert (record.output_tokens, record.unverified_count) == (N, ""), reader
    if form == "chat":
        joined = join_chat_stream(data_events([raw.encode()]), max_tokens=MAX_TOKENS)
        assert (joined.usage["completion_tokens"], joined.fault) == (N, "")


def test_a_stream_with_total_tokens_only_is_no_measurement_for_the_load():
    """usage.total_tokens and no completion_tokens: the load has no count of its own to put in its place."""
    events = honest("completion", N)
    events[-2] = events[-2].replace(f'"completion_tokens": {N}, ', "")
    raw = "".join(f"data: {e}\n\n" for e in events)
    for reader, record in _readers("completion", raw):
        assert not record.success and "no usage message with completion_tokens" in record.error, (reader, record)


@pytest.mark.parametrize("count", ["16", 16.0, -1, True, 1e300])
def test_a_non_streamed_usage_that_is_no_count_is_refused_by_the_answer_shape(count):
    """Every non-streamed chat answer a check reads passes `checked(ChatCompletion, ...)`: a count that is no JSON
    integer >= 0 is the server's fault named there, never a number a judge compares (the tool-call judge raised a
    TypeError on "16" >= max_tokens)."""
    body = {"choices": [{"message": {"content": "OK"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": count}}
    with pytest.raises(EndpointError, match=r"usage\.completion_tokens"):
        checked(ChatCompletion, body, "[hostile] POST /v1/chat/completions")
    body["usage"]["completion_tokens"] = 16
    assert checked(ChatCompletion, body, "[hostile] POST /v1/chat/completions") is body


# ---- identity: paths that say one model and load another, and honest spellings of the same weights ----------------
_STEP_OUT = "/models/HuggingFaceTB/SmolLM2-135M-Instruct/../../zai-org/GLM-4.7-Flash"
_HF_CACHE = "/root/.cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct/snapshots/ab12cd/"


def test_a_path_that_steps_out_of_the_declared_folder_is_read_where_it_lands():
    """`..` is resolved before families and weights are compared: the path above is GLM's folder."""
    from llmval.engines.identity import ModelEvidence, contradictions, path_parts

    assert path_parts(_STEP_OUT) == ("models", "zai-org", "glm-4.7-flash")
    said = contradictions("smollm2", None, [ModelEvidence("GET /v1/models root", ("smollm2",), _STEP_OUT)])
    assert said and "(glm)" in said[0], said
    declared = contradictions("smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct",
                              [ModelEvidence("GET /v1/models root", ("smollm2",), _STEP_OUT)])
    assert declared and "not the declared model_path" in declared[0], declared


@pytest.mark.subprocess
@pytest.mark.parametrize(("engine", "routes", "keys", "said"), [
    ("vllm", "step-out", {}, "(glm)"),
    ("sglang", "two-sources", {}, "/model_info model_path loaded '/srv/ckpt-old' but /server_info"),
], ids=["vllm-root-steps-out-to-glm", "sglang-server-info-and-get-model-info-disagree"])
def test_identity_stand_ins_are_red(tmp_path, engine, routes, keys, said):
    from selftest.hostile.test_model_behind_the_name import CHECK, _run, _sglang, _vllm_root

    table = {"step-out": _vllm_root(_STEP_OUT) if engine == "vllm" else None,
             "two-sources": _sglang("/srv/ckpt-new", model_info="/srv/ckpt-old")}
    identity = _run(tmp_path, table[routes], engine=engine, **keys)[CHECK]
    assert identity["cause"] == "broken" and said in identity["observed"], identity


@pytest.mark.subprocess
def test_a_declared_repository_served_from_the_hf_cache_with_a_trailing_slash_holds(tmp_path):
    from selftest.hostile.test_model_behind_the_name import CHECK, _run, _sglang

    identity = _run(tmp_path, _sglang(_HF_CACHE, model_info=_HF_CACHE.rstrip("/")), engine="sglang",
                    expect={"model_path": "HuggingFaceTB/SmolLM2-135M-Instruct"})[CHECK]
    assert identity["cause"] == "held", identity


# ---- baselines: a file that lies about where it belongs ----------------------------------------------------------
def _baselines(tmp_path):
    """A store holding the baseline of a slow deployment (FP8 KV: 50 tok/s), and the identity of the fast one."""
    from llmval.load import BaselineStore
    from selftest.load.test_baseline import IDENTITY, WORKLOAD, _run

    store = BaselineStore(tmp_path)
    slow = {**IDENTITY, "kv_cache_dtype": "fp8"}
    return store, store.save(_run(0.020), slow), slow, IDENTITY, WORKLOAD


def _place(store, identity, workload, endpoint="e"):
    from llmval.load._engine import server_key

    path = store.path(endpoint, server_key(identity), workload.key())
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize("moved", ["to-another-deployment", "to-another-workload", "to-another-endpoint"])
def test_a_baseline_moved_where_it_does_not_belong_is_refused_naming_the_file(tmp_path, moved):
    """The store finds a baseline by its place: the slow deployment's file copied under the fast one's key (or a
    C=1 run under a C=64 name, or another endpoint's) would make a 2x regression GREEN. Refused, naming the file."""
    import dataclasses

    from llmval.load._baseline import BaselineInvalid

    store, saved, _slow, fast, workload = _baselines(tmp_path)
    where = {"to-another-deployment": (fast, workload, "e"),
             "to-another-workload": ({**fast, "kv_cache_dtype": "fp8"}, dataclasses.replace(workload, concurrency=64),
                                     "e"),
             "to-another-endpoint": ({**fast, "kv_cache_dtype": "fp8"}, workload, "e2")}[moved]
    target = _place(store, *where)
    target.write_bytes(saved.read_bytes())
    said = {"to-another-deployment": "not the folder", "to-another-workload": "not the workload",
            "to-another-endpoint": "not 'e2'"}[moved]
    with pytest.raises(BaselineInvalid, match=said) as refused:
        store.load(where[2], where[0], where[1].key())
    assert str(target) in str(refused.value)


def test_the_baseline_saved_in_its_own_place_is_read(tmp_path):
    store, _saved, slow, _fast, workload = _baselines(tmp_path)
    baseline = store.load("e", slow, workload.key())
    assert baseline is not None and baseline.metrics["decode_tok_s"] == pytest.approx(50.0)


# ---- metrics: counters that reset and regrow, that fall mid-window, that are below 0 -----------------------------
def test_a_generation_counter_that_grew_less_than_the_run_streamed_measures_nothing():
    """Reset between the window's two scrapes and regrown (5000 -> restart -> 5005): no drop shows, but the counter
    grew by 5 while this run's verified streams carried 22 tokens. The REAL recordings' windows all grew by exactly
    their own tokens or more (foreign_tokens 0.0 in 253 windows, 258-516 where other traffic ran)."""
    import dataclasses

    from llmval.load._engine import WindowDeltas
    from selftest.load.test_baseline import _run

    run = _run(0.010)  # two successful streams of 11 tokens
    reset = dataclasses.replace(run, engine=WindowDeltas(5.0, 2.0, None, None))
    assert "grew 5 over the window" in reset.counters_impossible and "carried 22 tokens" in reset.counters_impossible
    for grown in (22.0, 538.0, None):  # its own tokens, with other traffic, no counter at all
        assert dataclasses.replace(run, engine=WindowDeltas(grown, 2.0, None, None)).counters_impossible == ""


def test_a_sampled_counter_that_falls_above_its_first_value_is_named():
    """100 -> 300 -> 150: every sample is above the first (its growth since it stays >= 0), yet it fell."""
    from llmval.engines import VllmAdapter
    from llmval.load._sampler import build_samples
    from selftest.engines.test_ranges import _vllm

    fell = build_samples(VllmAdapter, 1.0, [(0.0, _vllm(queries=100)), (0.5, _vllm(queries=300)),
                                            (1.0, _vllm(queries=150))], [1.0] * 3, [])
    assert "counter growth between two scrapes -150 (vllm:prefix_cache_queries from 0.5 s to 1.0 s)" in fell.impossible
    grew = build_samples(VllmAdapter, 1.0, [(0.0, _vllm(queries=100)), (0.5, _vllm(queries=300)),
                                            (1.0, _vllm(queries=300, hits=10))], [1.0] * 3, [])
    assert grew.impossible == ""


@pytest.mark.parametrize(("before", "after", "said"), [(-5, 100, "counter value -5"), (5000, "NaN", "nan"),
                                                       (5000, "+Inf", "inf")])
def test_a_window_counter_below_zero_or_not_finite_measures_nothing(before, after, said):
    from llmval.engines import VllmAdapter
    from llmval.load._engine import EngineCounters, window_deltas
    from selftest.engines.test_ranges import _m, _vllm

    deltas = window_deltas(EngineCounters(VllmAdapter, _m(_vllm(generated=before, finished=1))),
                           EngineCounters(VllmAdapter, _m(_vllm(generated=after, finished=2))))
    assert said in deltas.counters_impossible and "vllm:generation_tokens" in deltas.counters_impossible


# ---- the grids' chat answer: read in the shape every other chat answer is ------------------------------------------
@pytest.mark.parametrize(("message", "usage", "said"), [
    ({"content": ["The number is 4417702."]}, {"completion_tokens": 7}, "choices.0.message.content"),
    ({"content": "The number is 4417702."}, {"completion_tokens": "9999"}, "usage.completion_tokens"),
    ({"content": "The number is 4417702."}, {"completion_tokens": -7}, "usage.completion_tokens"),
], ids=["content-a-list", "count-a-string", "count-negative"])
def test_a_grid_answer_of_another_shape_is_named_never_read_as_text(message, usage, said):
    """`llmval.grid.server.ask` (the NIAH grid's one request) read a content of `["..."]` as its repr, which holds
    the needle, and dropped a count it could not read without a word."""
    import httpx

    from llmval.engines import VllmAdapter
    from llmval.grid.server import ask
    from selftest.hostile.server import HostileServer, answer

    def body(message: dict, usage: dict) -> dict:
        return {"id": "c", "object": "chat.completion", "model": "smollm2", "usage": usage,
                "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}]}

    def asked(route_body: dict):
        with HostileServer({"/v1/chat/completions": answer(route_body)}) as server, \
                httpx.Client(base_url=server.base_url) as client:
            return ask(client, endpoint="hostile", engine=VllmAdapter, model="smollm2",
                       messages=[{"role": "user", "content": "What is the number?"}], max_tokens=64)

    with pytest.raises(EndpointError, match=said.replace(".", r"\.")):
        asked(body(message, usage))
    honest = asked(body({"content": "The number is 4417702."}, {"prompt_tokens": 9, "completion_tokens": 7}))
    assert (honest.content, honest.completion_tokens) == ("The number is 4417702.", 7)


# ---- echoes read without word breaks ------------------------------------------------------------------------------
def test_an_echo_in_a_script_without_spaces_is_an_echo_and_a_quoted_needle_is_not():
    import random

    from llmval.grid.retrieval import not_a_retrieval

    rng = random.Random(42)
    hanzi = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种"
             "面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本"
             "去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比"
             "或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总"
             "次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做"
             "必战先回则任取据处理府研")
    prompt = "。".join("".join(rng.choice(hanzi) for _ in range(rng.randint(8, 30))) for _ in range(400))
    prompt += "。巴黎的特殊魔法数字是4417702。巴黎的特殊魔法数字是多少？"
    echo = prompt[len(prompt) // 2:len(prompt) // 2 + 600].replace("。", "")
    assert "letters and digits" in not_a_retrieval(echo + "4417702", prompt=prompt, max_tokens=512)
    assert not_a_retrieval("巴黎的特殊魔法数字是4417702。", prompt=prompt, max_tokens=64) == ""
    english = "The special magic number for Paris mentioned in the provided text is 4417702."
    haystack = " ".join(rng.choice(["grass", "sky", "river", "stone", "wind"]) for _ in range(2000))
    assert not_a_retrieval(english, prompt=f"{haystack} {english} {haystack}", max_tokens=64) == ""


# ---- tool calls: envelopes an agent framework cannot answer ------------------------------------------------------
_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def _call(**changes) -> dict:
    import json

    return {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}, **changes}


@pytest.mark.parametrize(("calls", "kind"), [
    ([_call(id="")], "envelope"), ([_call(id="   ")], "envelope"), ([_call(), _call()], "envelope"),
    ([_call(type="tool")], "envelope"), ([_call(id=7)], "envelope"),
    ([_call(function={"name": "get_weather", "arguments": '[{"city": "Paris"}]'})], "not_object"),
    ([_call(function={"name": "get_weather", "arguments": '"{\\"city\\": \\"Paris\\"}"'})], "not_object"),
], ids=["id-empty", "id-blank", "ids-duplicated", "type-tool", "id-a-number", "arguments-a-list",
        "arguments-a-string-of-json"])
def test_a_tool_call_envelope_no_client_can_answer_is_invalid_streamed_or_not(calls, kind):
    import json

    from llmval.toolcalls.catalogue import ExpectedCall, ToolCase
    from llmval.toolcalls.validate import Answer, judge

    case = ToolCase("weather", "single", [_TOOL], "weather in Paris", [ExpectedCall("get_weather", {"city": "Paris"})],
                    64)
    verdict = judge(case, Answer("", "", calls, "tool_calls", 12), max_tokens=64)
    assert not verdict.is_valid and kind in [p.kind for p in verdict.problems], verdict
    assert judge(case, Answer("", "", [_call()], "tool_calls", 12), max_tokens=64).is_accurate
    if not all(isinstance(c.get("id"), str) for c in calls):
        return  # a stream's id is a string or absent (its shape)
    events = [json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [{**c, "index": i}]},
                                       "finish_reason": None}]}) for i, c in enumerate(calls)]
    events += [json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
               json.dumps({"choices": [], "usage": {"completion_tokens": 12}}), "[DONE]"]
    streamed = judge(case, Answer.from_stream(join_chat_stream(events, max_tokens=64)), max_tokens=64)
    assert not streamed.is_valid and kind in [p.kind for p in streamed.problems], streamed


@pytest.mark.parametrize("edited", ["another-model", "another-engine"])
def test_a_baseline_whose_identity_was_edited_to_match_is_refused_where_its_run_says_otherwise(tmp_path, edited):
    """Another deployment's run (a bigger model's, or an SGLang engine's), its identity block replaced by this
    deployment's and moved into this one's folder: the run's own fields (the model it asked for, the engine whose
    metrics it sampled) still say whose it was. An edit of those too is not told from this deployment's own file;
    its numbers are still checked."""
    import dataclasses
    import json

    from llmval.load import BaselineStore
    from llmval.load._baseline import BaselineInvalid
    from selftest.load.test_baseline import IDENTITY, WORKLOAD, _run

    store = BaselineStore(tmp_path)
    theirs = _run(0.020)
    if edited == "another-model":
        theirs = dataclasses.replace(theirs, workload=dataclasses.replace(WORKLOAD, model="m-large"))
    saved = store.save(theirs, {**IDENTITY, "models": [{"id": "m-large", "root": "/m-large"}]})
    body = json.loads(saved.read_text())
    body["identity"] = IDENTITY
    body["workload"]["model"] = WORKLOAD.model if edited == "another-engine" else body["workload"]["model"]
    if edited == "another-engine":
        body["metrics"]["engine_samples"] = {"engine": "sglang", "interval_s": 1.0}
    target = _place(store, IDENTITY, WORKLOAD)
    target.write_text(json.dumps(body))
    said = {"another-model": "asked for model 'm-large'", "another-engine": "sampled a sglang engine's"}[edited]
    with pytest.raises(BaselineInvalid, match=said):
        store.load("e", IDENTITY, WORKLOAD.key())


def _two_ranks(kv: tuple[float, float], queries: tuple[float, float]) -> str:
    """A data-parallel vLLM scrape (engine="0" and engine="1"), SYNTHESIZED in the REAL label set."""
    from selftest.engines.test_ranges import _vllm

    one = 'vllm:kv_cache_usage_perc{engine="0",model_name="smollm2"} 0.25'
    return (_vllm(queries=queries[0]).replace(one, f'vllm:kv_cache_usage_perc{{engine="0",model_name="smollm2"}} '
                                                   f'{kv[0]}\nvllm:kv_cache_usage_perc{{engine="1",model_name='
                                                   f'"smollm2"}} {kv[1]}')
            + f'vllm:prefix_cache_queries_total{{engine="1",model_name="smollm2"}} {queries[1]}\n')


@pytest.mark.parametrize(("later", "said"), [
    (((1.8, 0.1), (100, 500)), 'KV-cache usage 1.8 (vllm:kv_cache_usage_perc{engine="0"'),
    (((0.2, 0.3), (400, 250)), 'counter growth between two scrapes -250 (vllm:prefix_cache_queries{engine="1"'),
], ids=["one-rank-kv-usage-1.8-averaged-to-0.95", "one-rank-counter-reset-summed-to-growth"])
def test_one_ranks_impossible_value_is_named_though_the_mean_or_sum_looks_fine(later, said):
    from llmval.engines import VllmAdapter
    from llmval.load._sampler import build_samples

    first = _two_ranks((0.2, 0.3), (100, 500))
    samples = build_samples(VllmAdapter, 1.0, [(0.0, first), (1.0, _two_ranks(*later))], [1.0, 1.0], [])
    assert said in samples.impossible, samples.impossible
    honest = build_samples(VllmAdapter, 1.0, [(0.0, first), (1.0, _two_ranks((0.9, 0.1), (400, 550)))],
                           [1.0, 1.0], [])
    assert honest.impossible == ""


# ---- snapshot --out: the inventory under names the first round had not tried -------------------------------------
@pytest.mark.parametrize("spelled", ["through-a-linked-folder", "read-through-a-link-written-to-its-target",
                                     "a-hard-link-read-written-to-the-original"])
def test_snapshot_never_writes_the_inventory_it_read_whatever_the_names(tmp_path, capsys, spelled):
    import os

    from selftest.snapshot.test_snapshot_writes import KPRO6_FP8, _seed, _snapshot

    inventory = _seed(tmp_path, "kpro6")
    before = inventory.read_bytes()
    read, out = inventory, inventory
    if spelled == "through-a-linked-folder":
        (tmp_path / "again").symlink_to(tmp_path, target_is_directory=True)
        out = tmp_path / "again" / inventory.name
    elif spelled == "read-through-a-link-written-to-its-target":
        read = tmp_path / "current.toml"
        read.symlink_to(inventory.name)
    else:
        read = tmp_path / "hard.toml"
        os.link(inventory, read)
    assert _snapshot(read, KPRO6_FP8, "--out", str(out), "--force") == int(pytest.ExitCode.USAGE_ERROR)
    assert "the file it was read from" in capsys.readouterr().err
    assert inventory.read_bytes() == before and not list(tmp_path.glob("*.bak-*"))
