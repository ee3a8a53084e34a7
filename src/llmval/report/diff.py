"""What changed between two runs of one deployment: verdicts, observed and measured values, the inventory.

`diff_runs(previous, current)` takes two runs' typed results (`llmval.report.results.RunResults`; a results JSON
document is parsed once) and returns
`Change`s, most important first: inventory edits (a gate raised, the model renamed), verdict changes,
observed-value changes of the same check, measured-value changes, and the run's own setup.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .results import RunResults, TestResult, parse_results

INVENTORY = "inventory"
VERDICT = "verdict"
OBSERVED = "observed"
MEASURED = "measured"
RUN = "run"
KIND_ORDER = (INVENTORY, VERDICT, OBSERVED, MEASURED, RUN)
_ITEM_KEYS = ("name", "id", "endpoint", "host")


@dataclasses.dataclass(frozen=True)
class Change:
    """One difference between the previous run and this one."""

    kind: str
    """inventory, verdict, observed, measured or run."""
    what: str
    before: Any
    after: Any
    note: str = ""
    """A reading of the change, e.g. "gate raised", "regressed"."""

    def describe(self) -> str:
        """One line: `perf[local-vllm].decode_tok_s_c1_min: 5 → 50 (gate raised)`."""
        text = f"{self.what}: {_show(self.before)} → {_show(self.after)}"
        return f"{text} ({self.note})" if self.note else text


def _show(value: Any) -> str:
    if value is None:
        return "(absent)"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Key paths of nested inventory data; list items named by name/id/endpoint: `perf[local-vllm].x`."""
    flat: dict[str, Any] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            flat.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        seen: dict[str, int] = {}
        for index, item in enumerate(value):
            label = next((item[k] for k in _ITEM_KEYS if isinstance(item.get(k), str) and item[k]), str(index))
            seen[label] = seen.get(label, 0) + 1
            label = label if seen[label] == 1 else f"{label}#{seen[label]}"
            flat.update(flatten(item, f"{prefix}[{label}]"))
    else:
        flat[prefix] = value
    return flat


def _gate_note(key: str, before: Any, after: Any) -> str:
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (before, after))
    if not numeric:
        return ""
    leaf = key.rsplit(".", 1)[-1]
    if leaf.endswith("_min") or leaf.startswith("min_") or leaf in {"accept_length_min", "all_pass_up_to"}:
        return "gate raised" if after > before else "gate lowered"
    if leaf.endswith("_max") or leaf.startswith("max_") or "tolerance" in leaf:
        return "limit loosened" if after > before else "limit tightened"
    return ""


def _whole_item(key: str, side: dict[str, Any]) -> str | None:
    """The outermost list item containing `key` that `side` has no key of at all (an added/removed item)."""
    for end, char in enumerate(key):
        if char == "]" and not any(k.startswith(key[:end + 1]) for k in side):
            return key[:end + 1]
    return None


def _is_empty(value: Any) -> bool:
    return value is None or value in ([], {}, "")


def inventory_changes(previous: dict | None, current: dict | None) -> list[Change]:
    """Edits between two inventory snapshots, keyed by readable paths; whole added/removed items on one line."""
    before, after = flatten(previous or {}), flatten(current or {})
    changes, grouped = [], set()
    for key in sorted(set(before) | set(after)):
        if key.startswith("$schema") or before.get(key) == after.get(key):
            continue
        old, new = before.get(key), after.get(key)
        if _is_empty(old) and _is_empty(new):
            continue  # an empty list or string that appeared or vanished says nothing
        item = _whole_item(key, before) if key not in before else _whole_item(key, after) if key not in after \
            else None
        if item is not None:
            if item not in grouped:
                grouped.add(item)
                added = key not in before
                changes.append(Change(INVENTORY, item, None if added else "declared", "declared" if added else None,
                                      "added" if added else "removed"))
            continue
        note = _gate_note(key, old, new)
        if not note and key.endswith(".model") and old and new:
            note = "served model renamed"
        changes.append(Change(INVENTORY, key, old, new, note))
    return changes


def _tests(results: RunResults) -> dict[str, TestResult]:
    return {t.nodeid: t for t in results.tests}


def _relative(before: float, after: float) -> str:
    if before == 0:
        return ""
    return f"{(after - before) / abs(before) * 100:+.1f}%"


def diff_runs(previous: RunResults | dict, current: RunResults | dict) -> list[Change]:
    """Every change from `previous` to `current` (typed results, or results documents), inventory first."""
    previous, current = parse_results(previous), parse_results(current)
    old_inventory, new_inventory = previous.inventory_snapshot, current.inventory_snapshot
    if old_inventory is not None and new_inventory is not None:
        changes = inventory_changes(old_inventory, new_inventory)
    else:
        changes = [Change(INVENTORY, "inventory snapshot", "recorded" if old_inventory else None,
                          "recorded" if new_inventory else None, "cannot compare inventories")]
    before, after = _tests(previous), _tests(current)
    for nodeid in sorted(set(before) & set(after)):
        old, new = before[nodeid], after[nodeid]
        if old.outcome != new.outcome:
            changes.append(Change(VERDICT, nodeid, old.outcome, new.outcome,
                                  "blocker lifted" if new.is_lifted else "fixed" if new.outcome == "passed" else
                                  ("broke" if new.outcome in {"failed", "error"} else "")))
        old_obs = {(v.target, v.check): v.observed for v in old.verdicts}
        for v in new.verdicts:
            key = (v.target, v.check)
            if key in old_obs and old_obs[key] != v.observed:
                changes.append(Change(OBSERVED, f"[{key[0]}] {key[1]}", old_obs[key], v.observed))
    new_ids = sorted(set(after) - set(before))
    gone_ids = sorted(set(before) - set(after))
    if new_ids:
        changes.append(Change(VERDICT, f"{len(new_ids)} test(s) new in this run", None,
                              ", ".join(new_ids[:5]) + (" …" if len(new_ids) > 5 else "")))
    if gone_ids:
        changes.append(Change(VERDICT, f"{len(gone_ids)} test(s) of the previous run not run now",
                              ", ".join(gone_ids[:5]) + (" …" if len(gone_ids) > 5 else ""), None))
    changes += measured_changes(previous, current)
    for key in ("markexpr", "mode", "inventory"):
        if getattr(previous, key) != getattr(current, key):
            changes.append(Change(RUN, key, getattr(previous, key), getattr(current, key)))
    return changes


def _measured(results: RunResults) -> dict[tuple[str, str], tuple[Any, str]]:
    return {(m.target, m.name): (m.value, m.unit) for test in results.tests for m in test.measured}


def measured_changes(previous: RunResults | dict, current: RunResults | dict) -> list[Change]:
    """Measured values (tok/s, scores, versions) that differ, largest relative change first."""
    previous, current = parse_results(previous), parse_results(current)
    before, after = _measured(previous), _measured(current)
    changes = []
    for key in sorted(set(before) & set(after)):
        old, new = before[key][0], after[key][0]
        if old == new:
            continue
        unit = after[key][1]
        what = f"[{key[0]}] {key[1]}" + (f" ({unit})" if unit else "")
        note = ""
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new)):
            note = _relative(float(old), float(new))
        changes.append(Change(MEASURED, what, old, new, note))

    def size(change: Change) -> float:
        try:
            return -abs(float(change.note.rstrip("%")))
        except ValueError:
            return 0.0

    return sorted(changes, key=size)
