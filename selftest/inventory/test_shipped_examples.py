"""The shipped inventories are the owners' examples (issue 46.5): they speak only of their deployment, never of
how the suite was made (an issue number, a message or chunk of a conversation, the seeds it was written from, a
reference document of the project's own), and each passes `check-inventory`."""

from __future__ import annotations

import re

import pytest

from llmval.inventory import load_inventory
from selftest.strategies import ROOT

SHIPPED = sorted((ROOT / "inventories").glob("*.toml"))
MAKING_OF_RE = re.compile(r"\bissues? \d|\bmessage \d|\bchunk \d|\bseeds\b|\bseeds?'|\bseed platforms?\b|\.\./shared"
                          r"|\b(?:engine|infra|lab|perf)\.md\b|§", re.IGNORECASE)
"""How the suite was made, not what the deployment is (`seed = 0`, a sampling seed, is a key of the deployment)."""


@pytest.mark.parametrize("inventory", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_inventory_speaks_only_of_its_deployment(inventory):
    said = [f"{inventory.name}:{number}: {line.strip()}" for number, line in
            enumerate(inventory.read_text().splitlines(), start=1) if MAKING_OF_RE.search(line)]
    assert not said, "\n".join(said)
    load_inventory(inventory)
