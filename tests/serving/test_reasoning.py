"""With a reasoning parser, reasoning arrives in its own field (reasoning / reasoning_content) and content is
clean; chat_template_kwargs enable_thinking=false turns reasoning off."""

import pytest

from llmval.engines.stream import REASONING_KEYS

pytestmark = [pytest.mark.serving]

THINK_TAGS = ("<think>", "</think>")
PROMPT = "What is 17 * 3? Answer with the number."


def _message(body: dict) -> tuple[str, str, str | None]:
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    reasoning = next((message[k] for k in REASONING_KEYS if message.get(k)), "")
    return message.get("content") or "", reasoning, choice.get("finish_reason")


def test_reasoning_in_its_own_field(endpoint, engine, expect, declared):
    declared(endpoint.reasoning or None, "reasoning = true")
    content, reasoning, finish = _message(engine.generate(PROMPT, max_tokens=2048))
    leaked = [t for t in THINK_TAGS if t in content]
    expect(endpoint.name, "serving.reasoning.separated", expected="reasoning field set, no think tags in content",
           observed=f"reasoning {len(reasoning)} chars, content {content[:80]!r}, tags in content {leaked}, "
                    f"finish_reason={finish}",
           ok=bool(reasoning) and not leaked and bool(content.strip()),
           hint=f"--reasoning-parser {endpoint.expect.reasoning_parser or '<parser>'}; content empty with "
                "finish_reason=length means </think> never came (raise max_tokens)")


def test_enable_thinking_false_is_honoured(endpoint, engine, expect, declared):
    declared(endpoint.reasoning or None, "reasoning = true")
    body = engine.generate(PROMPT, max_tokens=256, chat_template_kwargs={"enable_thinking": False})
    content, reasoning, finish = _message(body)
    expect(endpoint.name, "serving.reasoning.thinking_off", expected="no reasoning, answer in content",
           observed=f"reasoning {len(reasoning)} chars, content {content[:80]!r}, finish_reason={finish}",
           ok=not reasoning and bool(content.strip()) and not any(t in content for t in THINK_TAGS),
           hint="the chat template ignores enable_thinking, or the reasoning parser forces reasoning mode")
