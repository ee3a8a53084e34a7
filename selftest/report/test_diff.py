"""`diff_runs`: laws (a run diffed with itself is empty; one edited leaf is one change) and readings."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from llmval.report import diff_runs, flatten, inventory_changes

LEAVES = st.one_of(st.integers(-1000, 1000), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
                   st.booleans())
NAMES = st.text("abcdefgh", min_size=1, max_size=6)


@st.composite
def inventory_snapshots(draw):
    """Inventory-like data: sections of named items with scalar leaves."""
    sections = draw(st.dictionaries(NAMES, st.lists(
        st.dictionaries(NAMES, LEAVES, min_size=1, max_size=4), min_size=1, max_size=3), min_size=1, max_size=3))
    for items in sections.values():
        for index, item in enumerate(items):
            item["name"] = f"item{index}"
    return {"deployment": {"name": draw(NAMES)}, **sections}


def _run(snapshot: dict, outcome: str = "passed", value: float = 1.0) -> dict:
    return {"deployment": "d", "markexpr": "smoke", "mode": "attach", "inventory": "i.toml",
            "inventory_snapshot": snapshot,
            "tests": [{"nodeid": "t::a", "outcome": outcome,
                       "evidence": [{"subject": "s", "check": "c.x.y", "observed": str(value), "ok": True}],
                       "measured": [{"subject": "s", "name": "tok_s", "value": value, "unit": "tok/s"}]}]}


@given(inventory_snapshots())
def test_a_run_diffed_with_itself_has_no_changes(snapshot):
    run = _run(snapshot)
    assert diff_runs(run, copy.deepcopy(run)) == []


@given(inventory_snapshots(), st.data())
def test_one_edited_leaf_is_exactly_one_inventory_change(snapshot, data):
    flat = flatten(snapshot)
    key = data.draw(st.sampled_from(sorted(k for k in flat if not k.endswith(".name"))) if len(flat) > 1
                    else st.just("deployment.name"))
    edited = copy.deepcopy(snapshot)
    path = key.replace("]", "").replace("[", ".").split(".")
    node = edited
    for part in path[:-1]:
        node = node[part] if isinstance(node, dict) else next(i for i in node if i.get("name") == part)
    node[path[-1]] = ["an edit nobody made before"]
    changes = inventory_changes(snapshot, edited)
    assert [c.what for c in changes] == [key]


def test_gate_readings():
    before = {"perf": [{"endpoint": "e", "decode_tok_s_c1_min": 5.0, "ttft_p99_ms_max": 900}],
              "endpoints": [{"name": "e", "model": "smollm2"}]}
    after = {"perf": [{"endpoint": "e", "decode_tok_s_c1_min": 50.0, "ttft_p99_ms_max": 500}],
             "endpoints": [{"name": "e", "model": "smollm3"}]}
    described = [c.describe() for c in inventory_changes(before, after)]
    assert described == ["endpoints[e].model: smollm2 → smollm3 (served model renamed)",
                         "perf[e].decode_tok_s_c1_min: 5.0 → 50.0 (gate raised)",
                         "perf[e].ttft_p99_ms_max: 900 → 500 (limit tightened)"]


def test_verdict_and_measured_changes():
    changes = diff_runs(_run({}, "passed", 40.0), _run({}, "failed", 30.0))
    assert [c.describe() for c in changes] == [
        "t::a: passed → failed (broke)", "[s] c.x.y: 40.0 → 30.0", "[s] tok_s (tok/s): 40.0 → 30.0 (-25.0%)"]


def test_runs_without_snapshots_say_they_cannot_compare_inventories():
    old, new = _run({}), _run({})
    del old["inventory_snapshot"]
    assert [c.note for c in diff_runs(old, new)] == ["cannot compare inventories"]
