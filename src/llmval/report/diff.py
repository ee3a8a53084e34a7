"""What changed between two runs of one deployment: verdicts, observed and measured values, the inventory.

`diff_runs(previous, current)` takes two results JSON documents (see llmval.report.results) and returns
`Change`s, most important first: inventory edits (a gate raised, the model renamed), verdict changes,
observed-value changes of the same check, measured-value changes, and the run's own setup.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .results import upgrade_document

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


def _tests(document: dict) -> dict[str, dict]:
    return {t["nodeid"]: t for t in document.get("tests", [])}


def _relative(before: float, after: float) -> str:
    if before == 0:
        return ""
    return f"{(after - before) / abs(before) * 100:+.1f}%"


def _document(results: Any) -> dict:
    """A results document (dict, either schema version, or RunResults) as a current-schema dict."""
    if hasattr(results, "model_dump"):
        return results.model_dump(mode="json")
    return upgrade_document(results)


def diff_runs(previous: Any, current: Any) -> list[Change]:
    """Every change from `previous` to `current` (results documents or RunResults), inventory first."""
    previous, current = _document(previous), _document(current)
    old_inventory, new_inventory = previous.get("inventory_snapshot"), current.get("inventory_snapshot")
    if old_inventory is not None and new_inventory is not None:
        changes = inventory_changes(old_inventory, new_inventory)
    else:
        changes = [Change(INVENTORY, "inventory snapshot", "recorded" if old_inventory else None,
                          "recorded" if new_inventory else None, "cannot compare inventories")]
    before, after = _tests(previous), _tests(current)
    for nodeid in sorted(set(before) & set(after)):
        old, new = before[nodeid], after[nodeid]
        if old.get("outcome") != new.get("outcome"):
            lifted = any(b.get("state") == "lifted" for b in new.get("blockers", []))
            changes.append(Change(VERDICT, nodeid, old.get("outcome"), new.get("outcome"),
                                  "blocker lifted" if lifted else "fixed" if new.get("outcome") == "passed" else
                                  ("broke" if new.get("outcome") in {"failed", "error"} else "")))
        old_obs = {(v.get("target"), v.get("check")): v.get("observed") for v in old.get("verdicts", [])}
        for e in new.get("verdicts", []):
            key = (e.get("target"), e.get("check"))
            if key in old_obs and old_obs[key] != e.get("observed"):
                changes.append(Change(OBSERVED, f"[{key[0]}] {key[1]}", old_obs[key], e.get("observed")))
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
        if previous.get(key) != current.get(key):
            changes.append(Change(RUN, key, previous.get(key), current.get(key)))
    return changes


def _measured(document: dict) -> dict[tuple[str, str], dict]:
    values = {}
    for test in document.get("tests", []):
        for m in test.get("measured", []):
            values[(str(m.get("target")), str(m.get("name")))] = m
    return values


def measured_changes(previous: Any, current: Any) -> list[Change]:
    """Measured values (tok/s, scores, versions) that differ, largest relative change first."""
    previous, current = _document(previous), _document(current)
    before, after = _measured(previous), _measured(current)
    changes = []
    for key in sorted(set(before) & set(after)):
        old, new = before[key]["value"], after[key]["value"]
        if old == new:
            continue
        unit = after[key].get("unit") or ""
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
