"""Hints come from the inventory or say something true of any deployment (issue 31 item 5): no hint the suite
writes tells a seed deployment's story (kpro6's, the Sparks'); a seed's own story is in its inventory's
`[[hints]]`, quoted after the suite's hint on its own checks only."""

from __future__ import annotations

import ast
import json
import re
import tomllib

import pytest

from llmval.engines import ADAPTERS
from llmval.gpu.health import HINTS
from llmval.inventory import HintSpec
from llmval.inventory.report import with_owner_hints
from selftest.contract import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]

SEEDS = ("kpro6.toml", "spark.toml")
STORY_WORDS = ("GLM", "GDN", "IB link", "IB ip", "OOM-looped", "Workstation Edition", "RTX PRO 6000", "GB10")
"""The seeds' stories in their own words, beyond their names: the stale GLM container, the hybrid GDN model,
the Sparks' IB link, kpro6's num_steps 5 that OOM-looped, its RTX PRO 6000 Server (not Workstation) Edition, the
Sparks' GB10."""


def _seed_words() -> set[str]:
    """Names of the seed deployments (deployment, hosts, platforms, endpoints, models) and their story words."""
    words = set(STORY_WORDS)
    for name in SEEDS:
        data = tomllib.loads((ROOT / "inventories" / name).read_text(encoding="utf-8"))
        words.add(data["deployment"]["name"])
        words |= {h["name"] for h in data["hosts"]} | {h["platform"] for h in data["hosts"]}
        words |= {e["name"] for e in data["endpoints"]} | {e["model"] for e in data["endpoints"]}
    return words


def _hints_in_tests() -> list[tuple[str, str]]:
    """(where, text) of every string in a `hint=` argument or a `*HINT*` constant of the contract (tests/)."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = [k.value for k in ast.walk(tree) if isinstance(k, ast.keyword) and k.arg == "hint"]
        nodes += [a.value for a in ast.walk(tree) if isinstance(a, ast.Assign) and any(
            isinstance(t, ast.Name) and "HINT" in t.id for t in a.targets)]
        for node in nodes:
            for text in (n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)):
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return found


def _hints_in_src() -> list[tuple[str, str]]:
    """The suite's own hint texts in src/: the GPU health hints and each engine's abort hint."""
    return [(f"gpu.health.HINTS[{k}]", v) for k, v in HINTS.items()] + \
        [(f"{a.__name__}.abort_hint", a.abort_hint) for a in ADAPTERS.values()]


def test_no_hint_of_the_suite_tells_a_seed_deployments_story():
    words = _seed_words()
    pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(w)}" for w in sorted(words, key=len, reverse=True)), re.I)
    hints = _hints_in_tests() + _hints_in_src()
    assert len(hints) > 60
    told = {where: pattern.findall(text) for where, text in hints if pattern.search(text)}
    assert told == {}, told


def test_owner_hints_are_quoted_on_their_own_check_and_subject_only():
    hints = [HintSpec(check="serving.model.id", subject="spark-*", text="the old container came back"),
             HintSpec(check="hosts.ray.*", text="nodes meet on 192.168.200.0/24")]
    assert with_owner_hints("another model is served", hints, "spark-vllm", "serving.model.id") == \
        "another model is served; on this deployment: the old container came back"
    assert with_owner_hints("another model is served", hints, "kpro6-sglang", "serving.model.id") == \
        "another model is served"
    assert with_owner_hints("", hints, "spark1", "hosts.ray.alive_gpu_nodes") == \
        "on this deployment: nodes meet on 192.168.200.0/24"


def _served_model_message(pytester, inventory) -> str:
    run_contract(pytester, "-m", "smoke and serving", "-p", "no:xdist", "--inventory", str(inventory),
                 "--replay", str(ROOT / "selftest" / "data" / "replays" / "SYNTHESIZED-spark-vllm-glm"),
                 "-k", "test_served_model_matches_inventory")
    tests = json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]
    (model,) = [t for t in tests if "test_served_model_matches_inventory" in t["nodeid"]]
    assert model["outcome"] == "failed", model
    return model["message"]


@pytest.mark.parametrize("with_the_seeds_hints", [False, True])
def test_the_model_id_hint_tells_the_sparks_story_only_where_their_inventory_does(pytester, tmp_path,
                                                                               with_the_seeds_hints):
    """The Sparks' recording (SYNTHESIZED: GLM-4.7-Flash on the port) judged with spark.toml, and with the same
    inventory without its [[hints]] (any owner's inventory: before, it still told of the Sparks' reboot)."""
    text = (ROOT / "inventories" / "spark.toml").read_text(encoding="utf-8")
    if not with_the_seeds_hints:
        text = re.sub(r"\n\[\[hints\]\]\n(?:(?!\n\[).)*", "\n", text, flags=re.S)
        assert "[[hints]]" not in text
    inventory = tmp_path / "inventory.toml"
    inventory.write_text(text)
    message = _served_model_message(pytester, inventory)
    assert "observed: ['GLM-4.7-Flash']" in message and "`docker ps`" in message
    assert ("Sparks" in message) is with_the_seeds_hints, message
    assert ("on this deployment: " in message) is with_the_seeds_hints, message
