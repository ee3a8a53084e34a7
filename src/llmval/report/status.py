"""The status document of a run, built from the results JSON and the inventory.

It has the shape of the seeds' hand-written status message — Goal, Constraints & Preferences, Progress
(Done / Failing / Blocked), Key decisions with the checks that guard them, Next steps, Critical context,
Relevant files — plus "Changed since last run". Every fact comes from this run's evidence; what comes
only from the inventory is marked *declared*. `build_status` makes the structure; `render_markdown` and
`llmval.report.html` render it.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from ..inventory import Inventory
from .blockers import HOLDS, LIFTED
from .diff import Change, diff_runs

# States an item can carry; renderers turn them into badges.
OK, FAIL, ERROR, XFAIL, LIFT, UNCHECKED, DECLARED, INFO = (
    "ok", "fail", "error", "xfail", "lifted", "unchecked", "declared", "info")
# A path on a host in evidence text: absolute, ./relative or ~/; not the path part of a URL.
PATH_RE = re.compile(r"(?<![\w:/.\-])(?P<path>(?:~|\.{1,2})?/[\w.@%+=*-]+(?:/[\w.@%+=*-]+)+/?)")
PARAM_RE = re.compile(r"\[(?P<id>[^\]]+)\]$")
HINT_RE = re.compile(r"^\s*hint: (?P<hint>.+)$", re.M)
MAX_DONE_SUBJECTS = 4


@dataclasses.dataclass
class Item:
    """One line of the document, with optional detail lines under it."""

    text: str
    state: str = INFO
    detail: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Table:
    """A small table (measured values)."""

    header: list[str]
    rows: list[list[str]]


@dataclasses.dataclass
class Section:
    """A titled part of the document; `level` 2 or 3."""

    title: str
    items: list[Item] = dataclasses.field(default_factory=list)
    tables: list[tuple[str, Table]] = dataclasses.field(default_factory=list)
    note: str = ""
    level: int = 2
    tables_first: bool = False


@dataclasses.dataclass
class StatusDocument:
    """The whole status document."""

    title: str
    verdict: str
    """GREEN or RED."""
    summary: list[str]
    sections: list[Section]
    plots: list[str]
    """PNG file names in the reports folder, in display order."""


MD_SPECIAL_RE = re.compile(r"([`*|]|<(?=[A-Za-z/!?]))")  # `<` only where it could open an HTML tag


def esc(value: object) -> str:
    """Text from evidence or the inventory, escaped so Markdown shows it literally (`***` stays `***`)."""
    return MD_SPECIAL_RE.sub(r"\\\1", str(value))


def _platforms(inventory: Inventory) -> dict[str, str]:
    names = {h.name: h.platform for h in inventory.hosts}
    names.update({e.name: e.platform for e in inventory.endpoints})
    return names


def _records(results: dict) -> list[tuple[dict, dict]]:
    """(test, evidence record) pairs in test order."""
    return [(t, e) for t in results.get("tests", []) for e in t.get("evidence", [])]


def _verdicts_by_check(results: dict) -> dict[str, list[tuple[dict, dict]]]:
    by_check: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    for test, record in _records(results):
        by_check[str(record.get("check"))].append((test, record))
    return by_check


def _record_state(test: dict, record: dict) -> str:
    if record.get("ok"):
        return LIFT if any(b.get("state") == LIFTED for b in test.get("blockers", [])) else OK
    return XFAIL if test.get("outcome") == "xfailed" else FAIL


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _failing_record(test: dict) -> dict | None:
    failing = [e for e in test.get("evidence", []) if not e.get("ok", True)]
    return failing[-1] if failing else None


def _header(results: dict, inventory: Inventory) -> tuple[str, list[str]]:
    counts = results.get("counts", {})
    verdict = "GREEN" if results.get("exitstatus", 1) == 0 else "RED"
    scope = f"-m {results['markexpr']}" if results.get("markexpr") else "all checks"
    tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no tests ran"
    summary = [
        f"Run {results.get('started', '?')} · {scope} · mode {results.get('mode', '?')} · "
        f"{results.get('duration_s', 0):.1f} s · inventory `{results.get('inventory', '?')}`",
        f"Verdict: **{verdict}** ({tally}).",
        "Facts below come from this run's evidence; items marked *declared* come from the inventory only.",
    ]
    return verdict, summary


def _done(results: dict) -> Section:
    section = Section("Done", level=3, note="checks that passed, with what they observed")
    passing = defaultdict(list)
    for test, record in _records(results):
        if record.get("ok") and not any(b.get("state") == LIFTED for b in test.get("blockers", [])):
            passing[str(record.get("check"))].append(record)
    for check in sorted(passing):
        records = passing[check]
        shown = [f"{esc(r.get('subject'))}: {esc(r.get('observed'))}" for r in records[:MAX_DONE_SUBJECTS]]
        more = f" (+{len(records) - MAX_DONE_SUBJECTS} more)" if len(records) > MAX_DONE_SUBJECTS else ""
        if len(records) == 1:
            section.items.append(Item(f"`{check}` — {shown[0]}", OK))
        else:
            section.items.append(Item(f"`{check}` — {len(records)} verdicts pass{more}", OK, shown))
    if not section.items:
        section.items.append(Item("no check passed in this run", INFO))
    return section


def _clip(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _failing(results: dict) -> Section:
    section = Section("Failing", level=3, note="broken contract (FAIL) or could not check (ERROR), with the cause")
    same_cause: dict[tuple[str, str], Item] = {}
    for test in results.get("tests", []):
        outcome = test.get("outcome")
        if outcome not in {"failed", "error"} or any(b.get("state") == LIFTED for b in test.get("blockers", [])):
            continue
        record = _failing_record(test)
        message = test.get("message", "")
        if record is not None and outcome == "failed":
            text = (f"`{record.get('check')}` on {esc(record.get('subject'))}: expected {esc(record.get('expected'))}, "
                    f"observed {esc(record.get('observed'))}")
            detail = [f"test: `{test['nodeid']}`"]
            if hint := HINT_RE.search(message):
                detail.append(f"fix: {esc(hint.group('hint'))}")
            if record.get("evidence"):
                detail.append(f"evidence: {esc(_clip(record['evidence']))}")
            section.items.append(Item(text, FAIL, detail))
        else:
            state = ERROR if outcome == "error" or "could not check" in message else FAIL
            label = "could not check" if state == ERROR else "failed"
            e_line = next((line[1:].strip() for line in message.splitlines() if line.startswith("E ")), "")
            cause = _clip(e_line or _first_line(message).removeprefix("could not check "), 300)
            if (state, cause) in same_cause:  # one item per cause, naming every test it stopped
                same_cause[(state, cause)].detail.insert(0, f"also: `{test['nodeid']}`")
                continue
            item = Item(f"`{test['nodeid']}` — {label}: {esc(cause)}", state,
                        [esc(_clip(line.strip())) for line in message.splitlines()[1:3] if line.strip()])
            same_cause[(state, cause)] = item
            section.items.append(item)
    if not section.items:
        section.items.append(Item("nothing failing", OK))
    return section


def _blocker_states(results: dict) -> dict[str, list[tuple[dict, dict]]]:
    states: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    for test in results.get("tests", []):
        for b in test.get("blockers", []):
            states[b["id"]].append((test, b))
    return states


def _blocked(results: dict, inventory: Inventory) -> Section:
    section = Section("Blocked", level=3, note="known blockers from the inventory, run as strict xfail")
    states = _blocker_states(results)
    for blocker in inventory.blockers:
        seen = states.get(blocker.id, [])
        lifted = [b for _, b in seen if b.get("state") == LIFTED]
        holds = [b for _, b in seen if b.get("state") == HOLDS]
        head = f"**{blocker.id}**" + (f" ({blocker.platform})" if blocker.platform else "") + f": {esc(blocker.reason)}"
        detail = []
        if lifted:
            state = LIFT
            detail += [f"LIFTED: `{b['check']}` on {esc(b['subject'])} now passes (observed {esc(b.get('observed'))})"
                       for b in lifted]
            detail.append(f"revisit decision: {blocker.revisit or '(none named)'}")
        elif holds:
            state = XFAIL
        if holds:
            detail += [f"still holds: `{b['check']}` on {esc(b['subject'])} observed {esc(b.get('observed'))}"
                       for b in holds]
        if not holds and not lifted:
            state = UNCHECKED
            detail.append(f"not checked this run (no test stated `{blocker.check}`)")
        if blocker.workaround:
            detail.append(f"workaround: {esc(blocker.workaround)}")
        section.items.append(Item(head, state, detail))
    if not section.items:
        section.items.append(Item("no known blockers declared", INFO))
    return section


def _expected_failures(results: dict) -> Section | None:
    """xfailed tests that no declared blocker explains (the test itself expects to fail)."""
    items: dict[str, Item] = {}
    for test in results.get("tests", []):
        if test.get("outcome") != "xfailed" or test.get("blockers"):
            continue
        reason = _first_line(test.get("message", "")).removeprefix("xfail: ") or "(no reason)"
        item = items.setdefault(reason, Item(esc(_clip(reason, 200)), XFAIL))
        record = _failing_record(test)
        observed = f": observed {esc(record.get('observed'))}" if record else ""
        item.detail.append(f"`{test['nodeid']}`{observed}")
    if not items:
        return None
    for item in items.values():
        if len(item.detail) > MAX_DONE_SUBJECTS:
            item.detail[MAX_DONE_SUBJECTS:] = [f"… and {len(item.detail) - MAX_DONE_SUBJECTS} more"]
    return Section("Expected failures (xfail, no declared blocker)", list(items.values()), level=3)


def _skipped(results: dict) -> Section | None:
    reasons: dict[str, int] = defaultdict(int)
    for test in results.get("tests", []):
        if test.get("outcome") == "skipped":
            reasons[_first_line(test.get("message", "")).removeprefix("Skipped: ")[:160] or "(no reason)"] += 1
    if not reasons:
        return None
    items = [Item(f"{n}× {esc(reason)}", UNCHECKED) for reason, n in sorted(reasons.items())]
    return Section("Not checked (skipped)", items, level=3)


def _decisions(results: dict, inventory: Inventory) -> tuple[Section, list[Item]]:
    section = Section("Key decisions", note="each with the checks that guard it and their verdict in this run")
    next_steps: list[Item] = []
    platforms = _platforms(inventory)
    by_check = _verdicts_by_check(results)
    lifted_for = defaultdict(list)
    for blocker in inventory.blockers:
        if any(b.get("state") == LIFTED for _, b in _blocker_states(results).get(blocker.id, [])):
            lifted_for[blocker.revisit].append(blocker.id)
    for decision in inventory.decisions:
        detail, states, shown = [], [], set()
        for pattern in decision.guarded_by:
            hits = [(t, r) for check, pairs in by_check.items() if fnmatchcase(check, pattern) for t, r in pairs
                    if not decision.platform or platforms.get(str(r.get("subject"))) in {decision.platform, None}]
            if hits and all(id(r) in shown for _, r in hits):
                continue  # an earlier pattern of this decision already showed these verdicts
            hits = [(t, r) for t, r in hits if id(r) not in shown]
            shown.update(id(r) for _, r in hits)
            if not hits:
                detail.append(f"`{pattern}`: not checked this run")
                states.append(UNCHECKED)
                continue
            for test, record in hits[:MAX_DONE_SUBJECTS]:
                state = _record_state(test, record)
                states.append(state)
                word = {OK: "pass", FAIL: "FAIL", XFAIL: "xfail (blocked)", LIFT: "pass (blocker lifted)"}[state]
                detail.append(f"`{record.get('check')}` on {esc(record.get('subject'))}: {word} — observed "
                              f"{esc(record.get('observed'))}")
        if not decision.guarded_by:
            detail.append("no guarding check declared")
        if lifted_for.get(decision.id):
            detail.append(f"REVISIT: blocker(s) {', '.join(lifted_for[decision.id])} lifted")
            next_steps.append(Item(f"Revisit decision **{decision.id}** ({decision.decision}): blocker(s) "
                                   f"{', '.join(lifted_for[decision.id])} no longer hold", LIFT))
        state = (LIFT if lifted_for.get(decision.id) else FAIL if FAIL in states else
                 OK if {OK, XFAIL} & set(states) else UNCHECKED)
        if state == FAIL:
            next_steps.append(Item(f"Decision **{decision.id}** is no longer in force: a guarding check fails",
                                   FAIL))
        detail.insert(0, f"why: {esc(decision.rationale)}")
        if decision.revisit_when:
            detail.append(f"revisit when: {esc(decision.revisit_when)}")
        scope = f" ({decision.platform})" if decision.platform else ""
        section.items.append(Item(f"**{decision.id}**{scope}: {esc(decision.decision)}", state, detail))
    if not section.items:
        section.items.append(Item("no decisions declared in the inventory", INFO))
    return section, next_steps


def _next_steps(results: dict, inventory: Inventory, from_decisions: list[Item]) -> Section:
    section = Section("Next steps")
    section.items += [i for i in from_decisions if i.state == LIFT]
    for test in results.get("tests", []):
        if test.get("outcome") not in {"failed", "error"} or any(
                b.get("state") == LIFTED for b in test.get("blockers", [])):
            continue
        record, message = _failing_record(test), test.get("message", "")
        hint = HINT_RE.search(message)
        if record is not None and test.get("outcome") == "failed":
            text = f"Fix `{record.get('check')}` on {esc(record.get('subject'))}"
        else:
            text = f"Make `{test['nodeid']}` checkable again"
        section.items.append(Item(text + (f": {esc(hint.group('hint'))}" if hint else ""),
                                  FAIL if test.get("outcome") == "failed" else ERROR))
    section.items += [i for i in from_decisions if i.state == FAIL]
    section.items += [Item(esc(step), DECLARED) for step in inventory.deployment.next_steps]
    if not section.items:
        section.items.append(Item("nothing: every check holds", OK))
    return section


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    return str(value)


def _context(results: dict, inventory: Inventory) -> Section:
    section = Section("Critical context", note="measured facts per platform (this run), then declared ones",
                      tables_first=True)
    platforms = _platforms(inventory)
    rows: dict[str, list[list[str]]] = defaultdict(list)
    for test in results.get("tests", []):
        for m in test.get("measured", []):
            platform = platforms.get(str(m.get("subject")), "other")
            rows[platform].append([esc(m.get("subject")), esc(m.get("name")), esc(_value(m.get("value"))),
                                   esc(m.get("unit") or "")])
    for platform in sorted(rows):
        unique = sorted({tuple(r) for r in rows[platform]})
        section.tables.append((f"platform {platform}", Table(["subject", "measured", "value", "unit"],
                                                             [list(r) for r in unique])))
    for perf in inventory.perf:
        if perf.quoted_tok_s is not None:
            section.items.append(Item(f"{perf.endpoint}: owners quote {perf.quoted_tok_s:g} tok/s at C=1", DECLARED))
    section.items += [Item(esc(fact), DECLARED) for fact in inventory.deployment.critical_context]
    if not section.tables and not section.items:
        section.items.append(Item("no measured values in this run", INFO))
    return section


def evidence_paths(results: dict) -> dict[str, dict[str, set[str]]]:
    """subject → path → checks: paths quoted in the expected/observed/evidence text of this run's verdicts."""
    found: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    sources = [(str(r.get("subject")), str(r.get("check")),
                " ".join(str(r.get(k, "")) for k in ("expected", "observed", "evidence")))
               for _, r in _records(results)]
    for test in results.get("tests", []):
        if test.get("outcome") in {"failed", "error"} and (param := PARAM_RE.search(test.get("nodeid", ""))):
            sources.append((param.group("id"), test["nodeid"].split("::")[-1].split("[")[0], test.get("message", "")))
    for subject, check, text in sources:
        for match in PATH_RE.finditer(text):
            path = match.group("path").rstrip("/.,")
            if len(PurePosixPath(path).parts) >= 2:
                found[subject][path].add(check)
    return found


def _files(results: dict, inventory: Inventory) -> Section:
    section = Section("Relevant files", note="paths this run checked on each host, then declared ones")
    checked = evidence_paths(results)
    hosts = {h.name for h in inventory.hosts}
    for host in inventory.hosts:
        detail = [f"`{path}` — checked by {', '.join(sorted(checks))}"
                  for path, checks in sorted(checked.get(host.name, {}).items())]
        declared = [m.path for m in host.model_files] + inventory.deployment.relevant_files.get(host.name, [])
        detail += [f"`{path}` — *declared*" for path in declared if path not in checked.get(host.name, {})]
        if detail:
            section.items.append(Item(f"**{host.name}** ({host.platform})", INFO, detail))
    for subject in sorted(set(checked) - hosts):
        if subject in {e.name for e in inventory.endpoints}:
            continue  # an endpoint's URL paths are not files
        detail = [f"`{p}` — checked by {', '.join(sorted(c))}" for p, c in sorted(checked[subject].items())]
        section.items.append(Item(f"**{subject}**", INFO, detail))
    for name, paths in inventory.deployment.relevant_files.items():
        if name not in hosts:
            section.items.append(Item(f"**{name}**", DECLARED, [f"`{p}` — *declared*" for p in paths]))
    if not section.items:
        section.items.append(Item("no file paths in this run's evidence or the inventory", INFO))
    return section


def _changes(changes: list[Change] | None, previous_name: str | None) -> Section:
    if changes is None:
        return Section("Changed since last run", [Item("no previous run of this deployment in reports/history/",
                                                       INFO)])
    section = Section("Changed since last run", note=f"against {previous_name}" if previous_name else "")
    titles = {"inventory": "inventory", "verdict": "verdict", "observed": "observed",
              "measured": "measured", "run": "run"}
    for change in changes[:60]:
        state = {"broke": FAIL, "fixed": OK, "blocker lifted": LIFT}.get(change.note, INFO)
        section.items.append(Item(f"{titles.get(change.kind, change.kind)}: {esc(change.describe())}", state))
    if len(changes) > 60:
        section.items.append(Item(f"… {len(changes) - 60} more changes (see the results JSON)", INFO))
    if not changes:
        section.items.append(Item("nothing changed: same inventory, same verdicts, same values", OK))
    return section


def order_plots(names: list[str]) -> list[str]:
    """NIAH and agentic heatmaps first, then perf plots, then the rest, each alphabetically."""
    def rank(name: str) -> tuple[int, str]:
        low = name.lower()
        first = "niah" in low or "agentic" in low or "heatmap" in low
        return (0 if first else 1 if "perf" in low or "baseline" in low else 2, low)
    return sorted(names, key=rank)


def build_status(results: dict, inventory: Inventory, *, previous: dict | None = None,
                 previous_name: str | None = None, plots: list[str] = ()) -> StatusDocument:
    """The status document of one run; `previous` is the last results JSON of the same deployment."""
    deployment = inventory.deployment
    verdict, summary = _header(results, inventory)
    decisions, decision_steps = _decisions(results, inventory)
    progress = [_done(results), _failing(results), _blocked(results, inventory)]
    progress += [s for s in (_expected_failures(results), _skipped(results)) if s is not None]
    sections = [
        Section("Goal", [Item(esc(deployment.goal or "(no goal declared in [deployment])"), DECLARED)]),
        Section("Constraints & Preferences", [Item(esc(c), DECLARED) for c in deployment.constraints]
                or [Item("(none declared)", INFO)]),
        Section("Progress", note=""),
        *progress,
        decisions,
        _next_steps(results, inventory, decision_steps),
        _context(results, inventory),
        _files(results, inventory),
        _changes(diff_runs(previous, results) if previous is not None else None, previous_name),
    ]
    if results.get("deployment") and results["deployment"] != deployment.name:
        summary.append(f"Note: the results are of deployment '{results['deployment']}', the inventory of "
                       f"'{deployment.name}'.")
    title = f"Deployment status: {deployment.name} ({deployment.kind})"
    return StatusDocument(title, verdict, summary, sections, order_plots(list(plots)))


BADGES_MD = {OK: "✅", FAIL: "❌", ERROR: "⚠️", XFAIL: "⛔", LIFT: "🔓", UNCHECKED: "⏸️", DECLARED: "📝", INFO: "•"}


def _md_cell(text: str) -> str:
    return text.replace("\n", " ")  # `|` is already escaped by esc()


def render_markdown(doc: StatusDocument) -> str:
    """The document as GitHub-flavoured Markdown (reports/status.md)."""
    lines = [f"# {doc.title}", ""]
    lines += [f"{s}  " for s in doc.summary] + [""]
    for section in doc.sections:
        lines.append(f"{'#' * section.level} {section.title}")
        if section.note:
            lines.append(f"_{section.note}_")
        lines.append("")
        items, tables = [], []
        for item in section.items:
            items.append(f"- {BADGES_MD.get(item.state, '•')} {item.text}")
            items += [f"  - {d}" for d in item.detail]
        for caption, table in section.tables:
            tables += [f"**{caption}**", "", "| " + " | ".join(table.header) + " |", "|" + "---|" * len(table.header)]
            tables += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows] + [""]
        lines += tables + items if section.tables_first else items + ([""] if items and tables else []) + tables
        if section.items or section.tables:
            lines.append("")
    if doc.plots:
        lines += ["## Plots", ""] + [f"![{name}]({name})" for name in doc.plots] + [""]
    lines.append("Legend: ✅ holds · ❌ broken contract · ⚠️ could not check · ⛔ known blocker (xfail) · "
                 "🔓 blocker lifted · ⏸️ not checked this run · 📝 declared in the inventory")
    return "\n".join(lines) + "\n"
