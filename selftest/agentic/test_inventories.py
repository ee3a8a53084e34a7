"""The committed inventories declare the agentic grid up to the context their endpoints serve."""

from __future__ import annotations

import pytest

from llmval.agentic import plan_cells
from llmval.inventory import load_inventory
from selftest.strategies import ROOT


@pytest.mark.parametrize("name", ["kpro6", "spark", "local"])
def test_the_longest_cells_fill_the_served_context(name):
    inventory = load_inventory(ROOT / "inventories" / f"{name}.toml")
    assert inventory.agentic, f"{name}.toml declares no [[agentic]] grid"
    for spec in inventory.agentic:
        endpoint = inventory.endpoint(spec.endpoint)
        cells = plan_cells(spec, endpoint.max_model_len)
        longest = max(c.target_tokens for c in cells)
        assert longest == endpoint.max_model_len - spec.max_tokens - spec.margin_tokens
        assert {c.mode for c in cells} == {"nonstream", "stream"}
