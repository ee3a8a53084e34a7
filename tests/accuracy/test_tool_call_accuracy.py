"""Tool-call accuracy per catalogue category: the answer has exactly the calls asked for (names and
values, order-free for parallel calls). The serving contract's catalogue, gated by the inventory's
`tool_calls.min_accuracy`; the per-category table goes into the results."""

import pytest

from llmval.toolcalls import CATEGORIES

pytestmark = [pytest.mark.accuracy]
VARIANTS = ("strict", "free")


@pytest.mark.parametrize("category", CATEGORIES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_tool_call_accuracy_rate(endpoint, tool_call_sweep, expect, variant, category):
    if variant not in endpoint.tool_calls.variants:
        pytest.skip(f"the inventory's tool_calls.variants do not include {variant!r}")
    gate = endpoint.tool_calls.gate("accuracy", variant, category)
    if gate is None:
        pytest.skip(f"no tool_calls.min_accuracy gate applies to {variant}/{category}")
    cell = tool_call_sweep.cell(variant, category)
    expect.measure(endpoint.name, f"toolcalls.{variant}.{category}.accuracy", round(cell.accuracy or 0, 3),
                   f"of {cell.samples}")
    expect(endpoint.name, f"accuracy.tool_calls.{category}.{variant}", expected=f">= {gate}",
           observed=f"{cell.accurate}/{cell.samples} = {cell.accuracy or 0:.2f}; problems {cell.problems}",
           ok=cell.samples > 0 and (cell.accuracy or 0) >= gate,
           hint=tool_call_sweep.hint(cell, "see reports/toolcalls/<endpoint>/ for each wrong answer"),
           evidence=" || ".join(cell.examples))
