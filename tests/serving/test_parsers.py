"""Tool and reasoning parsers are configured, and tool calling works from the outside (the probe an agent
client makes): tool_choice="auto" must not be refused with "requires --enable-auto-tool-choice"."""

import pytest

pytestmark = [pytest.mark.serving, pytest.mark.smoke]
SERVED = ("serving.model.id",)  # another model on the port: its parsers are that server's (one fault, one root)


def test_tool_call_parser_configured(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.tool_call_parser, "expect.tool_call_parser")
    fact = engine.tool_call_parser()
    expect(endpoint.name, "serving.tool_call_parser", expected=expected, observed=fact.value,
           hint=f"--enable-auto-tool-choice --tool-call-parser {expected}", evidence=f"{fact.source}: {fact.quote}",
           depends_on=SERVED)


def test_tool_choice_auto_is_accepted(endpoint, engine, expect, declared):
    parser = declared(endpoint.expect.tool_call_parser, "expect.tool_call_parser")
    probe = engine.auto_tool_choice_probe()
    expect(endpoint.name, "serving.tool_choice.auto", expected=200, observed=probe.value,
           hint=f"the engine refuses tool calls: start it with --enable-auto-tool-choice --tool-call-parser {parser}",
           evidence=probe.quote, depends_on=("serving.tool_call_parser",))  # a wrong parser fails this probe too


def test_reasoning_parser_configured(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.reasoning_parser, "expect.reasoning_parser")
    fact = engine.reasoning_parser()
    expect(endpoint.name, "serving.reasoning_parser", expected=expected, observed=fact.value,
           hint=f"--reasoning-parser {expected}", evidence=f"{fact.source}: {fact.quote}", depends_on=SERVED)
