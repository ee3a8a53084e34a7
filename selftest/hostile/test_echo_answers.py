"""An echo is not a retrieval (issue 42.1): a server that answers with the prompt, with the haystack beside the
right sentence, or with more text than max_tokens (or its own usage) allows fails the NIAH cell, the agentic cell
and the correctness-under-load probe, naming why (`llmval.grid.not_a_retrieval`); honest answers, verbose ones
quoting the question and the needle included, still pass.

Before issue 42 the echo server was GREEN: "7/7 NIAH tests passed" (the needle is in the echo).
"""

from __future__ import annotations

import json

import httpx
import pytest

from llmval.agentic.scorer import score_call
from llmval.agentic.transcript import build_transcript
from llmval.engines import VllmAdapter
from llmval.grid import ServerTokenCounter, not_a_retrieval, prompt_text
from llmval.inventory import EndpointSpec, NiahSpec
from llmval.inventory.perf import CorrectnessSpec
from llmval.needle import NiahRunner
from llmval.toolcalls.validate import Answer
from llmval.underload.probes import niah_probes
from selftest.hostile.echoes import HONEST, LIES, answer_for, chat_route, tokenize_route
from selftest.hostile.harness import run_contract
from selftest.hostile.server import HostileServer

ENDPOINT = EndpointSpec(name="fake", platform="p", base_url="http://fake:1", engine="vllm", model="m",
                        max_model_len=8192)
SPEC = NiahSpec(endpoint="fake", context_lengths=[600, 1200], depths=[0.0, 0.5, 1.0], variants=["plain"],
                values=["number", "uuid"], all_pass_up_to=1200)


def _client(style: str) -> httpx.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.path == "/tokenize":
            from llmval.needle import whitespace_token_count
            return httpx.Response(200, json={"count": whitespace_token_count(body["messages"]), "tokens": []})
        text, usage = answer_for(style, body)
        return httpx.Response(200, json={"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                                         "usage": usage})

    return httpx.Client(base_url="http://fake:1", transport=httpx.MockTransport(handle))


def _niah(style: str) -> list:
    client = _client(style)
    count = ServerTokenCounter(client, endpoint="fake", engine=VllmAdapter, model="m")
    return NiahRunner(SPEC, ENDPOINT, client, count).measure_all()


@pytest.mark.parametrize("lie", LIES)
def test_every_niah_cell_of_a_server_that_does_not_retrieve_fails_naming_why(lie):
    results = _niah(lie)
    assert results and not any(r.is_pass for r in results)
    for result in results:
        assert LIES[lie] in result.not_retrieval, (lie, result.not_retrieval)


@pytest.mark.parametrize("style", HONEST)
def test_an_honest_server_passes_every_niah_cell(style):
    results = _niah(style)
    assert results and all(r.is_pass and not r.not_retrieval for r in results), \
        [(r.cell.id, r.not_retrieval, r.trials[0].others) for r in results if not r.is_pass]


@pytest.mark.parametrize("style", [*LIES, *HONEST])
def test_correctness_under_load_judges_a_probe_by_the_same_rule(style):
    probes = niah_probes(ENDPOINT, CorrectnessSpec(niah_lengths=[600], niah_depths=[0.5], tool_categories=[]),
                         _client(style))
    judged = [probe.ask() for probe in probes]
    if style in HONEST:
        assert all(a.is_correct for a in judged), [a.judged for a in judged]
    else:
        assert not any(a.is_correct or a.is_valid for a in judged)
        assert all(a.judged.startswith("not a retrieval") and LIES[style] in a.judged for a in judged), judged


NEEDLE = build_transcript(3, "error_code", 0.5, stream_steps=12)


@pytest.mark.parametrize(("content", "tokens", "said"), [
    ("\n".join(m["content"] or "" for m in NEEDLE.messages(12)), 40, "words"),  # the transcript in content
    ("", 2560, "above max_tokens"),                                               # usage x10
    ("", None, ""),                                                               # the honest call
], ids=["echo-beside-a-right-call", "usage-x10", "honest"])
def test_the_agentic_call_is_judged_by_the_same_rule(content, tokens, said):
    needle = NEEDLE.needle
    call = {"id": "c1", "type": "function",
            "function": {"name": needle.tool_name, "arguments": json.dumps(needle.expected_arguments)}}
    score = score_call(Answer(content, "", [call], "tool_calls", tokens), needle, max_tokens=256,
                       prompt=prompt_text(NEEDLE.messages(12)))
    if said:
        assert score.outcome == "not_retrieval" and said in score.problems[0], score
    else:
        assert score.is_pass, score


def test_the_rule_counts_what_no_tokenizer_can_pack_and_spares_short_quotes():
    haystack = " ".join(f"word{i}" for i in range(400))
    assert not_a_retrieval("It is 4417702.", prompt=haystack, max_tokens=64, completion_tokens=5) == ""
    assert "repeats the prompt" in not_a_retrieval(haystack[:400], prompt=haystack, max_tokens=512)
    assert "above max_tokens" in not_a_retrieval("It is 4417702.", prompt="", max_tokens=64, completion_tokens=65)
    assert "more than the 3 completion tokens" in not_a_retrieval("a b c d", prompt="", max_tokens=64,
                                                                   completion_tokens=3)
    assert not_a_retrieval("答案是4417702。", prompt="", max_tokens=8, completion_tokens=6) == ""  # no spaces: 1 word
    request = ("You call tools exactly as asked. Copy every value exactly. "
               "Call get_weather with city Paris and unit celsius.")
    assert not_a_retrieval("I will call get_weather with city Paris and unit celsius.", prompt=request,
                           max_tokens=None) == ""  # a short request restated: 8 words copied
    assert "repeats the prompt" in not_a_retrieval(request, prompt=request, max_tokens=None)


@pytest.mark.subprocess
@pytest.mark.parametrize(("style", "rc"), [("echo", 1), ("needle", 0)])
def test_the_niah_contract_against_an_echo_server_is_red_naming_the_echo(tmp_path, style, rc):
    """The lead's case end to end: the contract's NIAH cells against a HostileServer that echoes the prompt."""
    routes = {"/v1/chat/completions": chat_route(style), "/tokenize": tokenize_route}
    grid = ('[[niah]]\nendpoint = "hostile"\ncontext_lengths = [600, 1200]\ndepths = [0.0, 1.0]\n'
            'variants = ["plain"]\nvalues = ["number"]\nall_pass_up_to = 600\nmin_overall = 0.5\n')
    with HostileServer(routes) as server:
        run = run_contract(server, tmp_path, paths=("tests/accuracy",), args=("-k", "niah"), extra=grid)
    assert run.rc == rc, run.terminal[-3000:]
    if style == "echo":
        assert "not a retrieval" in run.terminal and "repeats the prompt" in run.terminal, run.terminal[-3000:]
        summary = next(line for line in reversed(run.terminal.splitlines()) if " passed" in line or " failed" in line)
        assert "xfail" not in summary, summary  # the 1200 cells, above all_pass_up_to, fail too: no miss is an echo


def test_every_recorded_chat_answer_is_a_retrieval_by_the_rule():
    """The honest control from recorded answers: every 200 chat completion in selftest/data's recordings (REAL: vLLM
    0.24.0 and SGLang 0.5.17 on the H200, the local engine; SYNTHESIZED: kpro6), judged with its own request's
    messages, max_tokens and usage, is not refused by the rule."""
    import base64

    from llmval.grid import generated_text
    from selftest.strategies import ROOT

    judged = []
    for path in sorted((ROOT / "selftest" / "data").rglob("http-*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if not record.get("url", "").endswith("/v1/chat/completions") or record.get("status") != 200 \
                    or "event-stream" in str(record.get("headers")) or not record.get("body_b64"):
                continue
            try:  # a recording keeps a long request body cut (its hash beside it): nothing to judge against
                request, body = json.loads(record["request_body"]), json.loads(base64.b64decode(record["body_b64"]))
            except ValueError:
                continue
            if not isinstance(body, dict) or not body.get("choices"):
                continue
            message = body["choices"][0].get("message") or {}
            text = generated_text(message.get("content"), message.get("reasoning_content") or message.get("reasoning"),
                                  message.get("tool_calls"))
            judged.append((path.parent.name, not_a_retrieval(
                text, prompt=prompt_text(request["messages"]), max_tokens=request.get("max_tokens"),
                completion_tokens=(body.get("usage") or {}).get("completion_tokens"))))
    assert len(judged) > 100 and [j for j in judged if j[1]] == []


@pytest.mark.parametrize(("style", "is_correct"), [("echo", False), ("usage-x10", False), ("honest", True)])
def test_a_tool_call_probe_beside_an_echo_or_a_made_up_count_is_invalid(style, is_correct):
    """Correctness under load's tool-call probes: the right call, but the prompt echoed in content or usage 10 x
    max_tokens, is no valid answer (an echo server would otherwise be 'kept' idle and under load alike)."""
    from llmval.engines import adapter_for
    from llmval.toolcalls import build_catalogue
    from llmval.underload.probes import ToolCallProbe

    case = build_catalogue(cases_per_category=1, categories=("flat",))[0]

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.path != "/v1/chat/completions":
            return httpx.Response(200, json={})
        calls = [{"id": f"c{i}", "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                 for i, c in enumerate(case.expected)]
        content = prompt_text(body["messages"]) if style == "echo" else None
        tokens = 10 * body["max_tokens"] if style == "usage-x10" else 40
        return httpx.Response(200, json={"choices": [{"message": {"content": content, "tool_calls": calls},
                                                      "finish_reason": "tool_calls"}],
                                         "usage": {"prompt_tokens": 50, "completion_tokens": tokens}})

    client = httpx.Client(base_url="http://fake:1", transport=httpx.MockTransport(handle))
    answer = ToolCallProbe(adapter_for(ENDPOINT, client), case, variant="strict", tool_choice="required").ask()
    assert (answer.is_valid, answer.is_correct) == (is_correct, is_correct), answer.judged
    if not is_correct:
        assert answer.judged.startswith("invalid (not generated as asked)"), answer.judged
