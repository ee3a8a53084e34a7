"""What a hostile server answers (issue 23.1-23.3): no secret through a cut, no hang past the request's time, no
traceback from a malformed answer, no unbounded body.

Each test runs the serving smoke contract (in a subprocess) against a HostileServer on 127.0.0.1 that answers
like vLLM except where the test says. The numbers are those of the adversarial pass that filed issue 23.
"""

from __future__ import annotations

import json
import resource

import pytest

from selftest.hostile.harness import API_KEY_ENV, KEY, leaks, run_contract
from selftest.hostile.server import HostileServer, answer, sse, trickle

assert len(KEY) == 40


def _no_traceback(run) -> None:
    assert "Traceback" not in run.terminal and "INTERNALERROR" not in run.terminal, run.terminal[-4000:]


def _outcomes(run) -> dict[str, tuple[str, str]]:
    tests = json.loads(run.files["reports/results.json"])["tests"]
    return {t["nodeid"].split("::")[-1].split("[")[0]: (t["outcome"], t["message"]) for t in tests}


# ---- 23.1 secrets through a cut -------------------------------------------------------------------------------

@pytest.mark.subprocess
@pytest.mark.parametrize("pad", [261, 120, 0])
def test_a_key_echoed_in_a_401_body_reaches_no_file_and_no_terminal_line(tmp_path, pad):
    """The 401 body holds the key after `pad` characters: at 261, the old `text[:300]` cut left 39 of its 40."""
    unauthorized = answer({"detail": "x" * pad + f" invalid key {KEY} for this server"}, status=401)
    with HostileServer({"/v1/models": unauthorized, "/v1/chat/completions": unauthorized}) as server:
        run = run_contract(server, tmp_path, endpoint={"api_key_env": API_KEY_ENV, "request_timeout_s": 10},
                           env={API_KEY_ENV: KEY})
    _no_traceback(run)
    assert any(f"Bearer {KEY}" == h.get("Authorization") for _, _, h in server.seen)  # the key was sent
    assert "HTTP 401" in run.files["reports/results.json"], run.terminal[-3000:]
    assert {"reports/partial/status.md", "reports/partial/report.html", "reports/junit.xml"} <= set(run.files)
    assert not leaks(run.everything(), KEY)


@pytest.mark.subprocess
def test_a_key_shorter_than_8_characters_is_refused_at_load_naming_the_key(tmp_path):
    with HostileServer() as server:
        run = run_contract(server, tmp_path, endpoint={"api_key_env": API_KEY_ENV}, env={API_KEY_ENV: "abc"})
    assert run.rc == 4, run.terminal[-3000:]
    assert "endpoints[0:hostile].api_key_env" in run.terminal and f"${API_KEY_ENV} holds 3 characters" in \
        run.terminal, run.terminal[-3000:]
    assert not server.seen  # nothing was sent
    _no_traceback(run)


# ---- 23.2 a trickling server ----------------------------------------------------------------------------------

@pytest.mark.subprocess
def test_a_health_answer_trickling_one_byte_a_second_is_named_hung_within_the_health_timeout(tmp_path):
    """request_timeout_s = 600 and health_timeout_s = 3: /health sends its headers, then a byte a second."""
    with HostileServer({"/health": trickle(b"x" * 100, every_s=1.0)}) as server:
        run = run_contract(server, tmp_path, endpoint={"request_timeout_s": 600, "health_timeout_s": 3},
                           timeout_s=90)
    _no_traceback(run)
    assert run.rc not in (-9, 0), run.terminal[-3000:]
    outcome, message = _outcomes(run)["test_health_answers_200"]
    assert outcome == "failed" and "within 3 s" in message and "hung or trickling" in message, message
    tests_s = sum(t["duration_s"] for t in json.loads(run.files["reports/results.json"])["tests"])
    assert tests_s < 20, f"the serving tests took {tests_s:.1f} s"


@pytest.mark.subprocess
def test_models_trickling_one_byte_a_second_ends_at_the_request_timeout(tmp_path):
    body = json.dumps({"object": "list", "data": [{"id": "smollm2", "owned_by": "vllm"}]}).encode()
    with HostileServer({"/v1/models": trickle(body, every_s=1.0)}) as server:
        run = run_contract(server, tmp_path, endpoint={"request_timeout_s": 4}, timeout_s=90)
    _no_traceback(run)
    outcome, message = _outcomes(run)["test_served_model_matches_inventory"]
    assert outcome == "error" and "within 4 s" in message and "hung or trickling" in message, message
    tests_s = sum(t["duration_s"] for t in json.loads(run.files["reports/results.json"])["tests"])
    assert tests_s < 30, f"the serving tests took {tests_s:.1f} s"


@pytest.mark.slow
def test_an_event_stream_of_one_event_a_second_ends_at_the_request_timeout():
    """The streamed chat (tool calls, reasoning, agentic grids): request_timeout_s = 3, an event a second."""
    import time

    from llmval.core.errors import EndpointError
    from llmval.engines import adapter_for
    from llmval.inventory import EndpointSpec
    from llmval.io.http import endpoint_client

    chunk = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
    with HostileServer({"/v1/chat/completions": sse([chunk] * 100, every_s=1.0)}) as server:
        spec = EndpointSpec(name="hostile", platform="local", base_url=server.base_url, engine="vllm",
                            model="smollm2", request_timeout_s=3)
        adapter = adapter_for(spec, endpoint_client(spec))
        started = time.monotonic()
        with pytest.raises(EndpointError, match=r"within 3 s.*hung or trickling"):
            adapter.chat_stream({"messages": [{"role": "user", "content": "hi"}]})
        assert time.monotonic() - started < 5


# ---- 23.3 malformed answers, huge bodies ---------------------------------------------------------------------

MALFORMED = {
    "models-data-strings": ({"/v1/models": answer({"object": "list", "data": ["smollm2"]})},
                            "test_served_model_matches_inventory", "data.0"),
    "models-body-list": ({"/v1/models": answer([])}, "test_served_model_matches_inventory", "<top level>"),
    "choices-string": ({"/v1/chat/completions": answer({"choices": "abc"})}, "test_tiny_generation_returns_text",
                       "choices"),
    "models-100000-deep": ({"/v1/models": answer("[" * 100_000 + "]" * 100_000)},
                           "test_served_model_matches_inventory", "nested too deep"),
    "chat-not-json": ({"/v1/chat/completions": answer("<html>oops</html>")}, "test_tiny_generation_returns_text",
                      "not JSON"),
    "version-number": ({"/version": answer({"version": 7})}, "test_engine_is_the_declared_kind", None),
}


@pytest.mark.subprocess
@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_a_malformed_answer_is_could_not_check_naming_the_shape(tmp_path, shape):
    routes, test, named = MALFORMED[shape]
    with HostileServer(routes) as server:
        run = run_contract(server, tmp_path, endpoint={"request_timeout_s": 10})
    _no_traceback(run)
    outcomes = _outcomes(run)
    outcome, message = outcomes[test]
    if named is None:  # judged without the malformed part, or could not check: never a traceback
        assert outcome in {"passed", "error"}, message
        return
    assert outcome == "error" and "could not check (EndpointError)" in message and named in message, message
    assert run.rc == 10 or (run.rc == 1 and any(o == "failed" for o, _ in outcomes.values())), run.terminal[-3000:]


def _huge(total: int, chunk: bytes = b" " * 2**20):
    def route(request) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(total))
        request.end_headers()
        for _ in range(total // len(chunk)):
            request.wfile.write(chunk)

    return route


@pytest.mark.subprocess
def test_a_200_mb_models_body_is_refused_past_the_cap_without_the_memory(tmp_path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with HostileServer({"/v1/models": _huge(200 * 2**20)}) as server:
        run = run_contract(server, tmp_path, endpoint={"request_timeout_s": 30})
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    _no_traceback(run)
    outcome, message = _outcomes(run)["test_served_model_matches_inventory"]
    assert outcome == "error" and "larger than 64 MiB" in message, message
    assert before / 1024 > 700 or peak_mb < 700, f"the run peaked at {peak_mb:.0f} MB"


@pytest.mark.subprocess  # runs the contract in a child
def test_a_56_mib_models_body_under_the_byte_cap_is_refused_before_it_is_parsed(tmp_path):
    """Under the 64 MiB cap, 56 MiB of /v1/models entries took 2.5 GB of RSS to read and parse (issue 32.2)."""
    item = b'{"id":"m","object":"model"},'
    body = b'{"object":"list","data":[' + item * (56 * 2**20 // len(item)) + b'{"id":"smollm2"}]}'
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with HostileServer({"/v1/models": answer(body)}) as server:
        run = run_contract(server, tmp_path, endpoint={"request_timeout_s": 30})
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    _no_traceback(run)
    outcome, message = _outcomes(run)["test_served_model_matches_inventory"]
    assert outcome == "error" and "over the 16 Mi the suite parses" in message, message
    assert before / 1024 > 900 or peak_mb < 900, f"the run peaked at {peak_mb:.0f} MB"


# ---- 31.3 an engine hung behind a live API server --------------------------------------------------------------

def _never_answers(request) -> None:
    """A generation request of an engine whose core is stopped: read, then nothing until the server closes."""
    request.rfile.read(int(request.headers.get("Content-Length") or 0))
    request.server.stop.wait()  # type: ignore[attr-defined]


@pytest.mark.subprocess  # runs the contract in a child
def test_a_hung_engine_behind_a_live_health_costs_one_generation_timeout(tmp_path):
    """SYNTHESIZED from the real case of issue 31.3 (vLLM 0.24.0 on the H200, EngineCore SIGSTOPped): /health,
    /v1/models and /version answer at once, a generation request never does. The first generation timeout, with
    /health still answering, makes the engine hung: every later generation request of the endpoint is not sent
    (could not check, naming the first timeout), one root cause in status.md. Before: each waited its whole
    request_timeout_s (smoke on the H200: 2 x 60 s)."""
    with HostileServer({"/v1/chat/completions": _never_answers}) as server:
        run = run_contract(server, tmp_path, endpoint={"request_timeout_s": 4, "expect.tool_call_parser": "hermes"},
                           timeout_s=120)
        generations = [path for method, path, _ in server.seen if method == "POST" and "completions" in path]
    _no_traceback(run)
    assert generations == ["/v1/chat/completions"], generations  # one request sent, not one per check
    outcomes = _outcomes(run)
    assert outcomes["test_health_answers_200"][0] == "passed"
    outcome, message = outcomes["test_tiny_generation_returns_text"]
    assert outcome == "error" and "no answer within 4 s" in message, message
    not_sent = {name: message for name, (outcome, message) in outcomes.items()
                if outcome == "error" and "not sent: the engine is hung" in message}
    assert not_sent, outcomes
    assert all("no answer within 4 s" in message for message in not_sent.values()), not_sent
    tests_s = sum(t["duration_s"] for t in json.loads(run.files["reports/results.json"])["tests"])
    # one 4 s timeout in all; before, one per generating check (4 s each)
    assert tests_s < 4 * (1 + len(not_sent)) - 1, f"the serving tests took {tests_s:.1f} s"
    failing = run.files["reports/partial/status.md"].split("### Failing", 1)[1].split("\n### ", 1)[0]
    timeouts = [line for line in failing.splitlines() if line.startswith("- ") and "EndpointTimeout" in line]
    assert len(timeouts) == 1, failing  # the other root: no `logs` declared, so the parser setting is not read
    assert f"could not check {1 + len(not_sent)} checks (EndpointTimeout), one cause: [hostile] the engine is hung" \
        in timeouts[0], failing
