"""The status document of a run, built from the results JSON and the inventory.

It has the shape of the seeds' hand-written status message — Goal, Constraints & Preferences, Progress
(Done / Failing / Blocked), Key decisions with the checks that guard them, Next steps, Critical context,
Relevant files — plus "Changed since last run". Every fact comes from this run's evidence; what comes
only from the inventory is marked *declared*. `build_status` makes the structure; `render_markdown` and
`llmval.report.html` render it.

It reads the typed results (`llmval.report.results.RunResults`): a verdict's `cause`, `error`, `paths`, a test's
`outcome`, `skip_reason`, `xfail_reason` and `crash`; it classifies nothing by the text of a message. Verdict text
is already redacted (llmval.core.verdict); text declared in the inventory is redacted here, once, as it is shown.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from fnmatch import fnmatchcase

from ..core.contract import redact
from ..core.verdict import Cause, Verdict
from ..inventory import Inventory
from .blockers import HOLDS, LIFTED
from .diff import Change, diff_runs
from .escape import md_code, md_text
from .exitcodes import ExitCode
from .results import BlockerRecord, RootCause, RunResults, TestResult, parse_results

# States an item can carry; renderers turn them into badges.
OK, FAIL, ERROR, XFAIL, LIFT, UNCHECKED, DECLARED, INFO = (
    "ok", "fail", "error", "xfail", "lifted", "unchecked", "declared", "info")
PARAM_RE = re.compile(r"\[(?P<id>[^\]]+)\]$")
MAX_DONE_SUBJECTS = 4
OUTCOME_WORDS = {"failed": "failed (broken contract)", "error": "could not check", "xfailed": "xfailed (known blocker)"}


@dataclasses.dataclass
class Item:
    """One line of the document, with optional detail lines under it."""

    text: str
    state: str = INFO
    detail: list[str] = dataclasses.field(default_factory=list)
    children: list[Item] = dataclasses.field(default_factory=list)
    """Items grouped under this one (the failures that depend on a root failure)."""
    folds: list[tuple[str, list[str]]] = dataclasses.field(default_factory=list)
    """(label, lines) shown folded under this item in report.html ("What broke": the cells, the dependents)."""


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
    roots: list[Failure] = dataclasses.field(default_factory=list)
    """Root failures, each with its dependents (the terminal summary prints them too)."""
    broke: Section | None = None
    """What broke, in short: report.html leads with it (root causes, their checks and dependents folded)."""
    warnings: list[str] = dataclasses.field(default_factory=list)


esc = md_text
"""Text from the typed results as Markdown that shows it literally (`***` stays `***`; llmval.report.escape)."""


def declared(text: str) -> str:
    """Text the inventory declares, redacted (its one pass: verdict text was redacted when it was made) and shown
    literally."""
    return md_text(redact(text))


def _platforms(inventory: Inventory) -> dict[str, str]:
    names = {h.name: h.platform for h in inventory.hosts}
    names.update({e.name: e.platform for e in inventory.endpoints})
    return names


def _records(results: RunResults) -> list[tuple[TestResult, Verdict]]:
    """(test, verdict) pairs in test order, could-not-check verdicts left out (they judged nothing)."""
    return [(t, v) for t in results.tests for v in t.verdicts if v.cause != Cause.COULD_NOT_CHECK]


def _verdicts_by_check(results: RunResults) -> dict[str, list[tuple[TestResult, Verdict]]]:
    by_check: dict[str, list[tuple[TestResult, Verdict]]] = defaultdict(list)
    for test, verdict in _records(results):
        by_check[verdict.check].append((test, verdict))
    return by_check


def _record_state(test: TestResult, verdict: Verdict) -> str:
    if verdict.is_held:
        return LIFT if test.is_lifted else OK
    return XFAIL if test.outcome == "xfailed" or verdict.cause == Cause.BLOCKED else FAIL


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _header(results: RunResults, warnings: list[str], notes: list[str]) -> tuple[str, list[str]]:
    verdict = "GREEN" if results.exitstatus == 0 else "RED"
    run_scope = results.run_scope
    scope = esc(run_scope.describe())
    tally = ", ".join(f"{n} {OUTCOME_WORDS.get(k, k)}" for k, n in sorted(results.counts.items())) or "no tests ran"
    exit_word = ""
    if results.exitstatus != 0:
        try:
            exit_word = f"exit {ExitCode(results.exitstatus).describe()}"
        except ValueError:
            exit_word = f"exit {results.exitstatus}"
    summary = [  # the verdict first: CI pastes this document into a job summary, and people read its top
        f"Verdict: **{verdict}** ({f'{scope}; ' if run_scope.is_partial else ''}{tally})"
        + (f" — {exit_word}" if exit_word else "")
        + (" — a replay: it judged a recording, not the deployment as it is now, so it is not the deployment's "
           "status (that is reports/status.md, which live runs write)." if results.mode == "replay"
           else " — a part of the contract, not the deployment's status (that is `../status.md`)."
           if run_scope.is_partial else "."),
        f"Run {results.started or '?'} · {scope} · mode {results.mode or '?'} · "
        f"{results.duration_s:.1f} s · inventory {md_code(results.inventory or '?')}",
    ]
    summary += [esc(n) for n in notes]
    summary += [f"**Warning:** {declared(w)}" for w in warnings]
    summary.append("Facts below come from this run's evidence; items marked *declared* come from the inventory only.")
    return verdict, summary


def _done(results: RunResults) -> Section:
    section = Section("Done", level=3, note="checks that passed, with what they observed")
    passing: dict[str, list[Verdict]] = defaultdict(list)
    for test, verdict in _records(results):
        if verdict.is_held and not test.is_lifted:
            passing[verdict.check].append(verdict)
    for check in sorted(passing):
        verdicts = passing[check]
        shown = [f"{esc(v.target)}: {esc(v.observed)}" for v in verdicts[:MAX_DONE_SUBJECTS]]
        more = f" (+{len(verdicts) - MAX_DONE_SUBJECTS} more)" if len(verdicts) > MAX_DONE_SUBJECTS else ""
        if len(verdicts) == 1:
            section.items.append(Item(f"{md_code(check)} — {shown[0]}", OK))
        else:
            section.items.append(Item(f"{md_code(check)} — {len(verdicts)} verdicts pass{more}", OK, shown))
    if not section.items:
        section.items.append(Item("no check passed in this run", INFO))
    return section


def _clip(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclasses.dataclass
class Failure:
    """One failed or errored test with the verdict that decided it; a root failure also carries the failures
    that depend on it and the other root failures of its shared cause (`also`: one missing recorded answer,
    one endpoint down)."""

    test: TestResult
    verdict: Verdict
    dependents: list[Failure] = dataclasses.field(default_factory=list)
    also: list[Failure] = dataclasses.field(default_factory=list)

    @property
    def state(self) -> str:
        return ERROR if self.verdict.cause == Cause.COULD_NOT_CHECK else FAIL

    @property
    def members(self) -> list[Failure]:
        """This failure and the others of its shared cause."""
        return [self, *self.also]

    @property
    def errors(self) -> str:
        """The error types of the members, in order (`CellNotMeasured, ReplayMiss`)."""
        return ", ".join(dict.fromkeys(m.verdict.error or "error" for m in self.members))

    def describe(self) -> str:
        """One line naming the check (or the test), the target and what was seen; for a shared cause, how many
        checks it stopped and the cause."""
        v = self.verdict
        if self.also:
            return (f"could not check {len(self.members)} checks ({self.errors}), one cause: "
                    f"{esc(_clip(v.shared_cause, 300))}")
        if v.cause == Cause.COULD_NOT_CHECK:
            return (f"{md_code(v.check)} on {esc(v.target or '?')} — could not check ({v.error}): "
                    f"{esc(_clip(v.observed, 300))}")
        return f"{md_code(v.check)} on {esc(v.target)}: expected {esc(v.expected)}, observed {esc(v.observed)}"


def by_test(failures: list[Failure]) -> list[tuple[str, list[str]]]:
    """(test id without parameters, [parameter ids]) of `failures`, in order: the cells under a root cause."""
    groups: dict[str, list[str]] = {}
    for failure in failures:
        test, bracket, param = failure.test.nodeid.partition("[")
        groups.setdefault(test, [])
        if bracket:
            groups[test].append(param[:-1])
    return list(groups.items())


def _unjudged_verdict(test: TestResult) -> Verdict:
    """A failure no verdict explains (a plain assert, an unexpected exception): pytest's crash line; could not
    check when pytest reported an error (setup or teardown), else broken."""
    param = PARAM_RE.search(test.nodeid)
    cause = Cause.COULD_NOT_CHECK if test.outcome == "error" else Cause.BROKEN
    return Verdict(target=param.group("id") if param else "", check=test.nodeid.split("::")[-1].split("[")[0],
                   observed=_clip(test.crash, 300), cause=cause,
                   error="error" if cause == Cause.COULD_NOT_CHECK else "")


def root_causes(results: RunResults) -> list[Failure]:
    """Each root failure (no failing check it depends on), with the failures that depend on it under it; never
    empty for a run that is not GREEN (`run_cause`: what made it RED when no test failed).

    A failure depends on another when its verdict's `depends_on` names that check, failing on the same
    target (or on a target its own name starts with), or names `check@target` (an endpoint's check on its
    host's: `hosts.gpu.zombie_workers@h200`); chains lead to their first failure. Dependencies are a DAG when the
    verdicts are made (`llmval.core.dependencies`); a document written before that (or edited) may still hold a
    cycle: its first failure in test order is then the root of the others, so no failure is left without one.
    Could-not-check roots of one shared cause (`Verdict.shared_cause`) are one root failure, the others in its
    `also`.
    """
    failures = []
    for test in results.tests:
        if test.outcome not in {"failed", "error"} or test.is_lifted:
            continue
        verdict = test.failing
        if verdict is None or verdict.cause == Cause.BLOCKED:
            verdict = _unjudged_verdict(test)
        failures.append(Failure(test, verdict))
    by_check: dict[str, list[Failure]] = defaultdict(list)
    for failure in failures:
        by_check[failure.verdict.check].append(failure)
    order = {id(f): n for n, f in enumerate(failures)}

    def parent(failure: Failure) -> Failure | None:
        for dependency in failure.verdict.depends_on:
            check, _, target = dependency.partition("@")
            for other in by_check.get(check, []):
                if other is failure:
                    continue
                if other.verdict.check == failure.verdict.check:  # only on the target it names (a container's
                    if target and other.verdict.target == target != failure.verdict.target:  # node)
                        return other
                elif (other.verdict.target == target if target else
                        other.verdict.target == failure.verdict.target
                        or failure.verdict.target.startswith(other.verdict.target)):
                    return other
        return None

    roots: list[Failure] = []
    for failure in failures:
        chain, node = [failure], failure
        while (up := parent(node)) is not None:
            if any(up is seen for seen in chain):  # a cycle: its first failure in test order is its root
                node = min(chain[next(n for n, seen in enumerate(chain) if seen is up):], key=lambda f: order[id(f)])
                break
            chain.append(up)
            node = up
        if node is failure:
            roots.append(failure)
        else:
            node.dependents.append(failure)
    shared: dict[str, Failure] = {}
    grouped: list[Failure] = []
    for root in roots:  # could-not-check roots of one shared cause are one root cause
        key = root.verdict.shared_cause
        if key and key in shared:
            shared[key].also.append(root)
            shared[key].dependents += root.dependents
            continue
        if key:
            shared[key] = root
        grouped.append(root)
    grouped.sort(key=lambda f: (f.state != FAIL, -len(f.members) - len(f.dependents)))
    for root in grouped:  # every root cause says what to do: a verdict made without a fix gets the generic one
        if not root.verdict.hint.strip():
            root.verdict = root.verdict.model_copy(update={"hint": GENERIC_FIX[root.verdict.cause == Cause.BROKEN]})
    if (not grouped or results.problems) and (cause := run_cause(results)) is not None:
        grouped.append(cause)  # a module that did not collect is a cause of its own, whatever else failed
    return grouped


GENERIC_FIX = {
    True: "make the target hold what `expected` says (the observed value and the evidence show what it is now), "
          "then run again",
    False: "the suite could not make this check for the reason observed: fix what it names (a target down, an "
           "answer the engine or a recording did not give) and run again; -v shows the error in full",
}
"""The fix of a root cause whose verdict carries none (broken: True; could not check: False)."""

RUN_NODEID = "(the run)"
"""The test id of a root cause outside any test (`run_cause`)."""


def run_cause(results: RunResults) -> Failure | None:
    """What made a run not GREEN when no test failed or could not check, as one root cause: a known blocker that
    no longer holds, a run that judged nothing, declared facts no check judged, an interrupted or broken run, a
    recording or report that could not be written (`RunResults.problems`). None for a GREEN run."""
    if results.exitstatus == ExitCode.GREEN:
        return None
    try:
        code = ExitCode(results.exitstatus)
    except ValueError:
        code = None
    problems = "; ".join(results.problems)
    lifted = [t for t in results.tests if t.is_lifted]
    counts = ", ".join(f"{n} {k}" for k, n in sorted(results.counts.items())) or "no test ran"
    cause, check, expected, observed, hint = Cause.COULD_NOT_CHECK, "run.exit", "exit 0 (GREEN)", "", ""
    if problems:
        observed, hint = problems, "the suite's own error, not the deployment's: fix what it names and run again"
    elif code == ExitCode.CONTRACT_BROKEN and lifted:
        cause, check = Cause.BROKEN, "run.blocker_lifted"
        observed = "known blocker(s) no longer hold: " + ", ".join(
            f"{b.id} ({b.check} on {b.target} now passes)" for t in lifted for b in t.blockers if b.state == LIFTED)
        hint = "revisit the decision the blocker names, then remove the blocker from the inventory"
    elif code == ExitCode.NOTHING_CHECKED:
        check = "run.nothing_checked"
        reasons = sorted({_first_line(t.skip_reason)[:160] for t in results.tests if t.outcome == "skipped"})
        observed = f"no check judged anything ({counts})" + (f"; skipped because: {'; '.join(reasons[:3])}"
                                                              if reasons else "")
        hint = ("the -m/-k selection or the inventory selects no check: run `pytest -m smoke` with the inventory "
                "that declares the hosts and endpoints")
    elif code == ExitCode.NOT_JUDGED:
        check = "run.not_judged"
        facts = results.not_judged or []
        observed = f"{len(facts)} declared fact(s) no check judged: {', '.join(facts[:8])}" + (
            f", … (+{len(facts) - 8})" if len(facts) > 8 else "")
        hint = "add a check that judges each, or remove it from the inventory"
    elif code == ExitCode.INTERRUPTED:
        check = "run.interrupted"
        observed = f"the run was interrupted (Ctrl-C, SIGTERM) or a test module failed to collect ({counts})"
        hint = "read the collection errors or the interruption in pytest's output, then run again"
    else:
        check = "run.exit"
        observed = f"exit {code.describe() if code is not None else results.exitstatus} ({counts})"
        hint = "read pytest's output: the error it printed is the cause"
    test = TestResult(nodeid=RUN_NODEID, outcome="failed" if cause == Cause.BROKEN else "error")
    return Failure(test, Verdict(target=results.deployment or "the run", check=check, expected=expected,
                                 observed=observed, hint=hint, cause=cause,
                                 error="" if cause == Cause.BROKEN else (code.name if code else "exit")))


def root_cause_records(roots: list[Failure]) -> list[RootCause]:
    """The root causes as results.json keeps them: each with its fix and the tests it explains; a cause shared by
    several checks observed as the other pages say it (its shared cause, not its first check's own words)."""
    return [RootCause(check=r.verdict.check, target=r.verdict.target, cause=r.verdict.cause,
                      test=r.test.nodeid, expected=r.verdict.expected,
                      observed=r.verdict.shared_cause if r.also else r.verdict.observed,
                      hint=r.verdict.hint, evidence=r.verdict.evidence, error=r.verdict.error,
                      explains=[f.test.nodeid for f in (*r.also, *r.dependents)]) for r in roots]


def _failing(roots: list[Failure]) -> Section:
    section = Section("Failing", level=3, note="root causes first: broken contract (FAIL) or could not check "
                                                "(ERROR), with the checks each explains under it")
    for root in roots:
        v = root.verdict
        if root.also:
            detail = [f"{md_code(test)} ×{len(params)}" + (": " + ", ".join(map(md_code, params)) if params else "")
                      for test, params in by_test(root.members)]
        else:
            detail = [f"test: {md_code(root.test.nodeid)}"]
        if v.hint:
            detail.append(f"fix: {esc(v.hint)}")
        if v.evidence:
            detail.append(f"evidence: {esc(_clip(v.evidence))}")
        if root.also and len(v.shared_cause) > 300:  # the line above cuts it: the whole cause under it
            detail.insert(0, f"cause: {one_line(v.shared_cause)}")
        item = Item(root.describe(), root.state, detail)
        if root.dependents:
            item.detail.append(dependents_label(root) + ":")
            item.children = [Item(f"{_clip(d.describe(), 260)} ({md_code(d.test.nodeid)})", d.state)
                             for d in root.dependents]
        section.items.append(item)
    if not section.items:
        section.items.append(Item("nothing failing", OK))
    return section


def dependents_label(root: Failure) -> str:
    """`3 checks explained by `serving.health` (2 could not run, 1 failed with it)`: the checks folded under a root."""
    n = len(root.dependents)
    unrun = sum(1 for d in root.dependents if d.verdict.cause == Cause.COULD_NOT_CHECK)
    # a shared cause is not its first member's check failing (a --launch that crashed is not hosts.reachable)
    cause = "the same cause" if root.also else f"{md_code(root.verdict.check)} failed"
    if unrun == n:
        return f"{n} check{'s' if n > 1 else ''} could not run because of {cause}" if root.also else \
            f"{n} check{'s' if n > 1 else ''} could not run because {cause}"
    parts = [f"{unrun} could not run" if unrun else "", f"{n - unrun} failed with it" if n - unrun else ""]
    return (f"{n} check{'s' if n > 1 else ''} explained by "
            f"{cause if root.also else md_code(root.verdict.check) + ' failing'} ({', '.join(p for p in parts if p)})")


def one_line(text: str) -> str:
    """Text of several lines (a launch error, a log excerpt) as one Markdown list item: each line kept, joined."""
    return " ↵ ".join(esc(line.strip()) for line in text.splitlines() if line.strip())


def cause_lines(root: Failure) -> list[str]:
    """A root cause whole, as the reports print it: expected, observed, the fix, the evidence, the test (no cut of
    its own words: the verdict's fields were shortened once, when it was made)."""
    v = root.verdict
    lines = [f"expected: {one_line(v.expected)}"] if v.expected else []
    lines.append(f"cause: {one_line(v.shared_cause)}" if root.also else f"observed: {one_line(v.observed)}")
    lines += [f"fix: {one_line(v.hint)}"] if v.hint else []
    lines += [f"evidence: {one_line(v.evidence)}"] if v.evidence else []
    if not root.also:
        lines.append(f"test: {md_code(root.test.nodeid)}")
    return lines


def _explained(failure: Failure) -> str:
    """One short line for a check a root cause explains (its whole text is under Failing)."""
    v = failure.verdict
    how = (f"could not check ({esc(v.error or 'error')})" if v.cause == Cause.COULD_NOT_CHECK else
           f"broken: observed {esc(_clip(v.observed, 120))}")
    return f"{md_code(v.check)} on {esc(v.target or '?')} — {how}"


def _what_broke(results: RunResults, roots: list[Failure], blocked: Section, not_judged: Section | None,
                verdict: str) -> Section:
    """The root causes, each whole with its fix and test (their cells and dependents folded), lifted blockers and
    unjudged facts: what made the run RED, in the order to fix it; for a GREEN run one line saying so."""
    section = Section("What broke", note="root causes first, each with its fix; the checks each explains are folded "
                                         "under it")
    for root in roots:
        v = root.verdict
        if root.also:
            text = f"could not check {len(root.members)} checks ({esc(root.errors)}), one cause"
        elif v.cause == Cause.COULD_NOT_CHECK:
            text = f"{md_code(v.check)} on {esc(v.target or '?')} — could not check ({esc(v.error or 'error')})"
        else:
            text = f"{md_code(v.check)} on {esc(v.target)} — broken"
        item = Item(text, root.state, cause_lines(root))
        if root.also:
            item.folds.append((f"the {len(root.members)} checks it stopped", [
                f"{md_code(test)} ×{len(params)}" + (": " + ", ".join(map(md_code, params)) if params else "")
                for test, params in by_test(root.members)]))
        if root.dependents:
            item.folds.append((dependents_label(root), [_explained(d) for d in root.dependents]))
        section.items.append(item)
    section.items += [Item(i.text, LIFT, i.detail) for i in blocked.items if i.state == LIFT]
    unjudged = [i.text for i in (not_judged.items if not_judged else []) if i.state == UNCHECKED]
    if unjudged and not any(r.verdict.check == "run.not_judged" for r in roots):
        section.items.append(Item(f"{len(unjudged)} declared fact{'s' if len(unjudged) > 1 else ''} no check "
                                  "judged (a full run is not GREEN while any)", UNCHECKED,
                                  folds=[("the facts", unjudged)]))
    if not section.items:
        held = sum(1 for t in results.tests if t.outcome == "passed")
        skipped = sum(1 for t in results.tests if t.outcome == "skipped")
        section.title = "Nothing broke"
        section.note = ""
        section.items.append(Item(f"every check that ran holds ({held} tests)"
                                  + (f"; {skipped} not checked (skipped), listed below" if skipped else ""), OK))
    return section


def _blocker_states(results: RunResults) -> dict[str, list[tuple[TestResult, BlockerRecord]]]:
    states: dict[str, list[tuple[TestResult, BlockerRecord]]] = defaultdict(list)
    for test in results.tests:
        for b in test.blockers:
            states[b.id].append((test, b))
    return states


def _blocked(results: RunResults, inventory: Inventory) -> Section:
    section = Section("Blocked", level=3, note="known blockers from the inventory, run as strict xfail")
    states = _blocker_states(results)
    for blocker in inventory.blockers:
        seen = states.get(blocker.id, [])
        lifted = [b for _, b in seen if b.state == LIFTED]
        holds = [b for _, b in seen if b.state == HOLDS]
        head = (f"**{esc(blocker.id)}**" + (f" ({esc(blocker.platform)})" if blocker.platform else "")
                + f": {declared(blocker.reason)}")
        detail = []
        if lifted:
            state = LIFT
            detail += [f"LIFTED: {md_code(b.check)} on {esc(b.target)} now passes (observed {esc(b.observed)})"
                       for b in lifted]
            detail.append(f"revisit decision: {esc(blocker.revisit or '(none named)')}")
        elif holds:
            state = XFAIL
        if holds:
            detail += [f"still holds: {md_code(b.check)} on {esc(b.target)} observed {esc(b.observed)}" for b in holds]
        if not holds and not lifted:
            state = UNCHECKED
            detail.append(f"not checked this run (no test stated {md_code(blocker.check)})")
        if blocker.workaround:
            detail.append(f"workaround: {declared(blocker.workaround)}")
        section.items.append(Item(head, state, detail))
    if not section.items:
        section.items.append(Item("no known blockers declared", INFO))
    return section


def _expected_failures(results: RunResults) -> Section | None:
    """xfailed tests that no declared blocker explains (the test itself expects to fail)."""
    items: dict[str, Item] = {}
    for test in results.tests:
        if test.outcome != "xfailed" or test.blockers:
            continue
        reason = test.xfail_reason or "(no reason)"
        item = items.setdefault(reason, Item(esc(_clip(reason, 200)), XFAIL))
        verdict = test.failing
        observed = f": observed {esc(verdict.observed)}" if verdict else ""
        item.detail.append(f"{md_code(test.nodeid)}{observed}")
    if not items:
        return None
    for item in items.values():
        if len(item.detail) > MAX_DONE_SUBJECTS:
            item.detail[MAX_DONE_SUBJECTS:] = [f"… and {len(item.detail) - MAX_DONE_SUBJECTS} more"]
    return Section("Expected failures (xfail, no declared blocker)", list(items.values()), level=3)


def _skipped(results: RunResults) -> Section | None:
    reasons: dict[str, int] = defaultdict(int)
    for test in results.tests:
        if test.outcome == "skipped":
            reasons[_first_line(test.skip_reason)[:160] or "(no reason)"] += 1
    if not reasons:
        return None
    items = [Item(f"{n}× {esc(reason)}", UNCHECKED) for reason, n in sorted(reasons.items())]
    return Section("Not checked (skipped)", items, level=3)


def _not_judged(results: RunResults) -> Section | None:
    """Declared facts no verdict judged (a full run only): the run is not GREEN while this is non-empty."""
    if results.not_judged is None:
        return None
    items = [Item(md_code(field), UNCHECKED) for field in results.not_judged]
    return Section("Declared but not judged", items or [Item("every declared fact was judged", OK)], level=3,
                   note="facts the inventory declares that no check of this full run judged (not GREEN while any)")


def _decisions(results: RunResults, inventory: Inventory) -> tuple[Section, list[Item]]:
    section = Section("Key decisions", note="each with the checks that guard it and their verdict in this run")
    next_steps: list[Item] = []
    platforms = _platforms(inventory)
    by_check = _verdicts_by_check(results)
    lifted_for = defaultdict(list)
    for blocker in inventory.blockers:
        if any(b.state == LIFTED for _, b in _blocker_states(results).get(blocker.id, [])):
            lifted_for[blocker.revisit].append(blocker.id)
    for decision in inventory.decisions:
        detail, states, shown = [], [], set()
        for pattern in decision.guarded_by:
            hits = [(t, r) for check, pairs in by_check.items() if fnmatchcase(check, pattern) for t, r in pairs
                    if not decision.platform or platforms.get(r.target) in {decision.platform, None}]
            if hits and all(id(r) in shown for _, r in hits):
                continue  # an earlier pattern of this decision already showed these verdicts
            hits = [(t, r) for t, r in hits if id(r) not in shown]
            shown.update(id(r) for _, r in hits)
            if not hits:
                detail.append(f"{md_code(pattern)}: not checked this run")
                states.append(UNCHECKED)
                continue
            for test, record in hits[:MAX_DONE_SUBJECTS]:
                state = _record_state(test, record)
                states.append(state)
                word = {OK: "pass", FAIL: "FAIL", XFAIL: "xfail (blocked)", LIFT: "pass (blocker lifted)"}[state]
                detail.append(f"{md_code(record.check)} on {esc(record.target)}: {word} — observed "
                              f"{esc(record.observed)}")
        if not decision.guarded_by:
            detail.append("no guarding check declared")
        if lifted_for.get(decision.id):
            detail.append(f"REVISIT: blocker(s) {esc(', '.join(lifted_for[decision.id]))} lifted")
            next_steps.append(Item(f"Revisit decision **{esc(decision.id)}** ({declared(decision.decision)}): "
                                   f"blocker(s) {esc(', '.join(lifted_for[decision.id]))} no longer hold", LIFT))
        state = (LIFT if lifted_for.get(decision.id) else FAIL if FAIL in states else
                 OK if {OK, XFAIL} & set(states) else UNCHECKED)
        if state == FAIL:
            next_steps.append(Item(f"Decision **{esc(decision.id)}** is no longer in force: a guarding check fails",
                                   FAIL))
        detail.insert(0, f"why: {declared(decision.rationale)}")
        if decision.revisit_when:
            detail.append(f"revisit when: {declared(decision.revisit_when)}")
        scope = f" ({esc(decision.platform)})" if decision.platform else ""
        section.items.append(Item(f"**{esc(decision.id)}**{scope}: {declared(decision.decision)}", state, detail))
    if not section.items:
        section.items.append(Item("no decisions declared in the inventory", INFO))
    return section, next_steps


def _next_steps(roots: list[Failure], inventory: Inventory, from_decisions: list[Item]) -> Section:
    section = Section("Next steps", note="root causes first: fixing one lets its dependents run")
    section.items += [i for i in from_decisions if i.state == LIFT]
    for root in roots:
        v = root.verdict
        text = (f"Fix {md_code(v.check)} on {esc(v.target)}" if v.cause == Cause.BROKEN else
                f"Make {len(root.members)} checks checkable again ({esc(_clip(v.shared_cause, 200))})" if root.also
                else f"Make {md_code(root.test.nodeid)} checkable again")
        if root.test.nodeid == RUN_NODEID:
            text = f"Make the run GREEN ({esc(_clip(v.observed, 200))})"
        if root.dependents:
            text += f" (then {len(root.dependents)} dependent check{'s' if len(root.dependents) > 1 else ''} can run)"
        section.items.append(Item(text + (f": {esc(v.hint)}" if v.hint else ""), root.state))
    section.items += [i for i in from_decisions if i.state == FAIL]
    section.items += [Item(declared(step), DECLARED) for step in inventory.deployment.next_steps]
    if not section.items:
        section.items.append(Item("nothing: every check holds", OK))
    return section


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    return str(value)


def _context(results: RunResults, inventory: Inventory) -> Section:
    section = Section("Critical context", note="measured facts per platform (this run), then declared ones",
                      tables_first=True)
    platforms = _platforms(inventory)
    rows: dict[str, list[list[str]]] = defaultdict(list)
    for test in results.tests:
        for m in test.measured:
            platform = platforms.get(m.target, "other")
            rows[platform].append([esc(m.target), esc(m.name), esc(_value(m.value)), esc(m.unit)])
    for platform in sorted(rows):
        unique = sorted({tuple(r) for r in rows[platform]})
        section.tables.append((f"platform {esc(platform)}", Table(["subject", "measured", "value", "unit"],
                                                             [list(r) for r in unique])))
    for perf in inventory.perf:
        if perf.quoted_tok_s is not None:
            section.items.append(Item(f"{esc(perf.endpoint)}: owners quote {perf.quoted_tok_s:g} tok/s at C=1",
                                      DECLARED))
    section.items += [Item(declared(fact), DECLARED) for fact in inventory.deployment.critical_context]
    if not section.tables and not section.items:
        section.items.append(Item("no measured values in this run", INFO))
    return section


def evidence_paths(results: RunResults | dict) -> dict[str, dict[str, set[str]]]:
    """host → path → checks: the files this run's verdicts say their host facts read (`Verdict.paths`)."""
    results = parse_results(results)
    found: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for test in results.tests:
        for verdict in test.verdicts:
            for read in verdict.paths:
                found[read.host][read.path].add(verdict.check)
    return found


def _files(results: RunResults, inventory: Inventory) -> Section:
    section = Section("Relevant files", note="paths this run checked on each host, then declared ones")
    checked = evidence_paths(results)
    hosts = {h.name for h in inventory.hosts}
    for host in inventory.hosts:
        detail = [f"{md_code(path)} — checked by {', '.join(sorted(checks))}"
                  for path, checks in sorted(checked.get(host.name, {}).items())]
        named = [m.path for m in host.model_files] + inventory.deployment.relevant_files.get(host.name, [])
        detail += [f"{md_code(redact(path))} — *declared*" for path in named if path not in checked.get(host.name, {})]
        if detail:
            section.items.append(Item(f"**{esc(host.name)}** ({esc(host.platform)})", INFO, detail))
    for subject in sorted(set(checked) - hosts):
        detail = [f"{md_code(p)} — checked by {', '.join(sorted(c))}" for p, c in sorted(checked[subject].items())]
        section.items.append(Item(f"**{esc(subject)}**", INFO, detail))
    for name, paths in inventory.deployment.relevant_files.items():
        if name not in hosts:
            section.items.append(Item(f"**{esc(name)}**", DECLARED,
                                      [f"{md_code(redact(p))} — *declared*" for p in paths]))
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


def build_status(results: RunResults | dict, inventory: Inventory, *, previous: RunResults | dict | None = None,
                 previous_name: str | None = None, plots: list[str] = (),
                 warnings: list[str] = (), notes: list[str] = ()) -> StatusDocument:
    """The status document of one run; `previous` is the last results of the same deployment and scope;
    `notes` (the last run of the other declared scope) and `warnings` (e.g. a key sent over plain http) are shown
    under the verdict."""
    results = parse_results(results)
    deployment = inventory.deployment
    verdict, summary = _header(results, list(warnings), list(notes))
    roots = root_causes(results)
    decisions, decision_steps = _decisions(results, inventory)
    progress = [_done(results), _failing(roots), _blocked(results, inventory)]
    progress += [s for s in (_expected_failures(results), _skipped(results), _not_judged(results))
                 if s is not None]
    sections = [
        Section("Goal", [Item(declared(deployment.goal or "(no goal declared in [deployment])"), DECLARED)]),
        Section("Constraints & Preferences", [Item(declared(c), DECLARED) for c in deployment.constraints]
                or [Item("(none declared)", INFO)]),
        Section("Progress", note=""),
        *progress,
        decisions,
        _next_steps(roots, inventory, decision_steps),
        _context(results, inventory),
        _files(results, inventory),
        _changes(diff_runs(previous, results) if previous is not None else None,
                 previous_name),
    ]
    if results.deployment and results.deployment != deployment.name:
        summary.append(f"Note: the results are of deployment '{results.deployment}', the inventory of "
                       f"'{deployment.name}'.")
    title = f"Deployment status: {esc(deployment.name)} ({esc(deployment.kind)})"
    broke = _what_broke(results, roots, progress[2], next((p for p in progress if p.title == "Declared but not judged"),
                                                          None), verdict)
    return StatusDocument(title, verdict, summary, sections, order_plots(list(plots)), roots, broke,
                          list(warnings))


BADGES_MD = {OK: "✅", FAIL: "❌", ERROR: "⚠️", XFAIL: "⛔", LIFT: "🔓", UNCHECKED: "⏸️", DECLARED: "📝", INFO: "•"}


def _md_cell(text: str) -> str:
    return text.replace("\n", " ")  # `|` is already escaped by esc()


MAX_FOLDED_MD = 12
"""Lines of a fold (the checks a root cause explains) shown in status.md's "What broke"; the rest are counted (each
is listed under Failing)."""


def _broke_markdown(section: Section) -> list[str]:
    lines = [f"## {section.title}"] + ([f"_{section.note}_"] if section.note else []) + [""]
    for item in section.items:
        lines.append(f"- {BADGES_MD.get(item.state, '•')} {item.text}")
        lines += [f"  - {d}" for d in item.detail]
        for label, folded in item.folds:
            lines.append(f"  - {label}:")
            lines += [f"    - {line}" for line in folded[:MAX_FOLDED_MD]]
            if len(folded) > MAX_FOLDED_MD:
                lines.append(f"    - … and {len(folded) - MAX_FOLDED_MD} more (each under Failing below)")
    return [*lines, ""]


def render_markdown(doc: StatusDocument, plots_at: str = "") -> str:
    """The document as GitHub-flavoured Markdown (reports/status.md)."""
    lines = [f"# {doc.title}", "", f"{doc.summary[0]}  " if doc.summary else "", ""]
    if doc.broke is not None:  # what broke comes before everything else a person would scroll past
        lines += _broke_markdown(doc.broke)
    lines += [f"{s}  " for s in doc.summary[1:]] + [""]
    for section in doc.sections:
        lines.append(f"{'#' * section.level} {section.title}")
        if section.note:
            lines.append(f"_{section.note}_")
        lines.append("")
        items, tables = [], []
        for item in section.items:
            items.append(f"- {BADGES_MD.get(item.state, '•')} {item.text}")
            items += [f"  - {d}" for d in item.detail]
            items += [f"    - {BADGES_MD.get(c.state, '•')} {c.text}" for c in item.children]
        for caption, table in section.tables:
            tables += [f"**{caption}**", "", "| " + " | ".join(table.header) + " |", "|" + "---|" * len(table.header)]
            tables += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows] + [""]
        lines += tables + items if section.tables_first else items + ([""] if items and tables else []) + tables
        if section.items or section.tables:
            lines.append("")
    if doc.plots:
        # `plots_at`: where the plots are, seen from status.md's folder (a replay's or a partial run's status.md is
        # one folder below the reports folder, where the run wrote its plots)
        lines += ["## Plots", ""] + [f"![{name}]({plots_at}{name})" for name in doc.plots] + [""]
    lines.append("Legend: ✅ holds · ❌ broken contract · ⚠️ could not check · ⛔ known blocker (xfail) · "
                 "🔓 blocker lifted · ⏸️ not checked this run · 📝 declared in the inventory")
    return "\n".join(lines) + "\n"
