"""Tool-call validity per catalogue category and variant (strict / free tools), non-streamed and streamed:
arguments are JSON objects valid against their schema, not truncated (even when finish_reason says
tool_calls), no markup leaks, and streamed deltas join to the non-streamed calls. Gates come from the
inventory; every failing answer is saved under reports/toolcalls/<endpoint>/."""

import pytest

from llmval.toolcalls import CATEGORIES

pytestmark = [pytest.mark.serving]
VARIANTS = ("strict", "free")
VALIDITY_HINT = ("read the saved answers; schema errors with free tools: send tools with strict=true; truncation: "
                 "raise max_tokens or fix streaming (qwen3_coder buffers large values)")


@pytest.mark.parametrize("category", CATEGORIES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_tool_call_validity_rate(endpoint, tool_call_sweep, expect, variant, category):
    if variant not in endpoint.tool_calls.variants:
        pytest.skip(f"the inventory's tool_calls.variants do not include {variant!r}")
    if category == "large_string" and not endpoint.tool_calls.large_argument_kib:
        pytest.skip(f"no large-argument size fits max_model_len = {endpoint.max_model_len}")
    cell = tool_call_sweep.cell(variant, category)
    gate = endpoint.tool_calls.gate("validity", variant, category)
    expect.measure(endpoint.name, f"toolcalls.{variant}.{category}.validity", round(cell.validity or 0, 3),
                   f"of {cell.samples}")
    expect(endpoint.name, f"serving.tool_calls.{category}.{variant}.validity", expected=f">= {gate}",
           observed=f"{cell.valid}/{cell.samples} = {cell.validity or 0:.2f}; problems {cell.problems}",
           ok=cell.samples > 0 and (cell.validity or 0) >= gate,
           hint=tool_call_sweep.hint(cell, VALIDITY_HINT),
           evidence=" || ".join(cell.examples))
