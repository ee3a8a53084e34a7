"""The endpoint is up, generates for real, and is the engine the inventory says."""

import pytest

from llmval.core.errors import EndpointError

pytestmark = [pytest.mark.serving, pytest.mark.smoke]


def test_health_answers_200(endpoint, engine, expect):
    health = engine.probe_health()
    # a server killed under its workers leaves them holding the GPUs: that zombie is the root cause, not this
    zombie = (f"hosts.gpu.zombie_workers@{endpoint.host}",) if endpoint.host else ()
    evidence = health.quote if health.value == 200 else "; ".join(filter(None, (health.quote, engine.last_words())))
    expect(endpoint.name, "serving.health", expected=200, observed=health.value,
           hint="a server that accepts connections but never answers is hung: check the engine log and "
                "`ss -tnp` on its port; a refused connection means it is down", evidence=evidence,
           depends_on=zombie)


# A chat completion passes through the parsers the engine was started with (vLLM runs its tool parser on every
# answer when auto tool choice is on): a wrong parser that fails a plain request is that parser's one fault.
GENERATION_DEPENDS_ON = ("serving.tool_call_parser", "serving.reasoning_parser")


def test_tiny_generation_returns_text(endpoint, engine, expect):
    expected = "> 0 completion tokens with text"
    try:
        body = engine.generate("Reply with the word OK.", max_tokens=8)
    except EndpointError as error:
        if error.status < 500:
            raise
        # the engine answered a plain request with a server error: a broken contract, not a check it could not make
        expect(endpoint.name, "serving.generation.tokens", expected=expected, observed=str(error), ok=False,
               hint="the engine fails plain chat completions: read its log for the exception (a wrong "
                    "--tool-call-parser or --reasoning-parser fails every answer)", depends_on=GENERATION_DEPENDS_ON)
    choice = (body.get("choices") or [{}])[0]
    text = (choice.get("message") or {}).get("content") or ""
    tokens = (body.get("usage") or {}).get("completion_tokens", 0)
    expect(endpoint.name, "serving.generation.tokens", expected=expected,
           observed=f"{tokens} tokens, finish_reason={choice.get('finish_reason')}: {text[:80]!r}",
           ok=tokens > 0 and bool(text.strip()), hint="the engine accepts requests but produces nothing; read its log",
           depends_on=GENERATION_DEPENDS_ON)


def test_engine_is_the_declared_kind(endpoint, engine, expect):
    from llmval.engines import detect_engine

    detected = detect_engine(engine)
    expect(endpoint.name, "serving.engine.kind", expected=endpoint.engine, observed=detected.value,
           hint="the port serves a different engine than the inventory says (another container on it?)",
           evidence=f"{detected.source}: {detected.quote}")
    if engine.has_version:
        expect.measure(endpoint.name, "serving.engine.version", engine.version.value)
