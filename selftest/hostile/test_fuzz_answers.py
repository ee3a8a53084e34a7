"""The server-answer fuzzer (issue 23 "Done means"): whatever a server answers, a run never shows a traceback,
never waits past the declared deadlines and never writes or prints a secret.

Two levels, both seeded (selftest/hostile/mutations.py `fuzzed_routes`):

- in-process, many examples: every fact the smoke contract reads of a vLLM endpoint (health, models, version,
  generation, tool choice, streamed chat, metrics, engine kind) against a HostileServer answering hostile on
  about 40 % of its paths. Laws: each call returns or raises an LlmvalError (could not check), within
  its requests' deadlines; no message holds a fragment of the API key (selftest.hostile.harness.leaks).
- the whole smoke contract on a sample of seeds (a subprocess each). Laws: exit status 0, 1 or 10; no
  INTERNALERROR or Python traceback in the terminal; every test that did not pass carries a typed verdict
  (broken from `expect`, or could-not-check from an LlmvalError), never a crash; no test ran past its
  requests' deadlines; no fragment of the key in any file written or in the terminal.

The CI-sized default is 25 in-process examples (about 30 s) and 4 contract seeds (about 20 s);
`LLMVAL_FUZZ_EXAMPLES=N` and `LLMVAL_FUZZ_SEEDS=N` widen them (the counts in the closing note of issue 23 are
from 300 and 40).
"""

from __future__ import annotations

import json
import os
import random
import time

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from llmval.core.errors import LlmvalError
from selftest.hostile.harness import API_KEY_ENV, leaks, run_contract
from selftest.hostile.mutations import fuzzed_routes
from selftest.hostile.server import HostileServer

KEY = "Fz9Qw3Er5Ty7Ui1Op2As4Df6Gh8Jk0LzXcVbNm1Q"
REQUEST_S, HEALTH_S = 2.0, 1.0
CONTRACT_SEEDS = range(int(os.environ.get("LLMVAL_FUZZ_SEEDS", "4")))
IN_PROCESS_EXAMPLES = int(os.environ.get("LLMVAL_FUZZ_EXAMPLES", "25"))
FACTS = ("probe_health", "model_cards", "model_card", "version", "generate", "auto_tool_choice_probe",
         "chat_stream", "metrics", "detect_engine")
"""Each one call; most make one request, a few two (the first probe of /health, the dead-endpoint /health)."""
PER_FACT_S = 2 * HEALTH_S + 2 * REQUEST_S + 1.0
"""The most one fact may take: its requests' deadlines (two /health, two requests) plus a second of slack."""


def _fact(adapter, name: str):
    from llmval.engines import detect_engine

    if name == "detect_engine":
        return detect_engine(adapter)
    if name == "generate":
        return adapter.generate("Reply OK", max_tokens=4)
    if name == "chat_stream":
        return adapter.chat_stream({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
    value = getattr(adapter, name)
    return value() if callable(value) else value


@pytest.mark.slow
@settings(max_examples=IN_PROCESS_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_every_fact_read_from_a_hostile_server_is_a_value_or_could_not_check(seed, monkeypatch):
    from llmval.core.contract import add_secrets
    from llmval.engines import adapter_for
    from llmval.inventory import EndpointSpec
    from llmval.io.http import endpoint_client

    monkeypatch.setenv(API_KEY_ENV, KEY)
    add_secrets([KEY])  # as the run registers the inventory's *_env values
    routes, said = fuzzed_routes(random.Random(seed), KEY)
    note(f"routes: {said}")
    with HostileServer(routes) as server:
        spec = EndpointSpec(name="hostile", platform="local", base_url=server.base_url, engine="vllm", model="smollm2",
                            api_key_env=API_KEY_ENV, request_timeout_s=REQUEST_S, health_timeout_s=HEALTH_S)
        adapter = adapter_for(spec, endpoint_client(spec), read_log=lambda: "")
        said_texts = {}
        for name in FACTS:
            started = time.monotonic()
            try:
                _fact(adapter, name)  # a value may hold what the server said: verdicts redact it (contract law)
            except LlmvalError as error:  # could not check: the one allowed exception; its words are redacted
                said_texts[name] = str(error)
            elapsed = time.monotonic() - started
            assert elapsed < PER_FACT_S, f"{name} took {elapsed:.1f} s against {said}"
    assert not leaks(said_texts, KEY), said_texts


def _crashes(document: dict) -> list[tuple[str, str, str]]:
    """Tests that did not pass without a typed verdict saying why (a Python exception decided them)."""
    bad = []
    for test in document["tests"]:
        if test["outcome"] in {"passed", "skipped", "xfailed"}:
            continue
        failing = [v for v in test["verdicts"] if v["cause"] in {"broken", "could-not-check"}]
        if not failing:
            bad.append((test["nodeid"], test["outcome"], test["message"][-600:]))
    return bad


@pytest.mark.subprocess
@pytest.mark.parametrize("seed", CONTRACT_SEEDS)
def test_the_smoke_contract_against_a_hostile_server_ends_typed_bounded_and_clean(tmp_path, seed):
    routes, said = fuzzed_routes(random.Random(seed), KEY)
    with HostileServer(routes) as server:
        run = run_contract(server, tmp_path, endpoint={"api_key_env": API_KEY_ENV, "request_timeout_s": REQUEST_S,
                                                       "health_timeout_s": HEALTH_S},
                           env={API_KEY_ENV: KEY}, timeout_s=120)
    where = f"seed {seed}, routes {said}"
    assert run.rc in (0, 1, 10), f"{where}: exit {run.rc}\n{run.terminal[-3000:]}"
    assert "INTERNALERROR" not in run.terminal and "Traceback (most recent call last)" not in run.terminal, \
        f"{where}\n{run.terminal[-3000:]}"
    document = json.loads(run.files["reports/results.json"])
    assert not _crashes(document), f"{where}: {_crashes(document)}"
    slow = [(t["nodeid"], t["duration_s"]) for t in document["tests"] if t["duration_s"] > PER_FACT_S * 2]
    assert not slow, f"{where}: past the deadlines: {slow}"
    # a run of tests/serving alone is a partial run (issue 20.6): its status documents go under reports/partial/
    assert {"reports/partial/status.md", "reports/partial/report.html", "reports/junit.xml"} <= set(run.files), where
    assert not leaks(run.everything(), KEY), f"{where}: {leaks(run.everything(), KEY)[:5]}"
