"""What part of the contract a run judged: the whole of it, a declared scope, or a part someone picked.

The deployment's status (`reports/status.md`, `report.html`, `results.json`, `history/`) is written only by runs
of a declared scope: `nightly` (the whole contract: all of it collected, no `-m` other than `nightly`) and
`smoke` (`-m smoke` over the whole contract: the owners' after-reboot run). Anything narrower (`-k`, `--lf`,
`--sw`, `--deselect`, `--ignore`, a file or node id, another `-m`) is a *partial* run: it says so in its verdict
line ("partial: -k kv_cache") and writes its own record under `reports/partial/`, so it never replaces the last
full status or enters the history as a full run.

A `--replay` run judges a recording, not the deployment as it is now: whatever its scope, its status and history
go under `reports/replay/` (`record_dir`), so a replayed GREEN (the README's first run) never becomes the
deployment's status, and the next live run is compared with the last live one, never with a replay.

A `-m` is judged by what it selects of the contract, where every test is marked `llmval` and `nightly`: `-m "smoke
or not llmval"` (the smoke checks and the ops repo's own tests, as `llmval init`'s CI runs them) is the smoke scope,
`-m "nightly or not llmval"` the whole contract (`on_the_contract`).

    >>> scope_of(Selection(markexpr="smoke")).describe()
    '-m smoke'
    >>> scope_of(Selection(keyword="kv_cache", paths=("hosts/test_gpus.py",))).describe()
    'partial: -k kv_cache, hosts/test_gpus.py'
    >>> scope_of(Selection(markexpr="smoke or not llmval")).describe()
    '-m smoke'
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SCOPES = {"": "nightly", "nightly": "nightly", "smoke": "smoke"}
"""The declared scopes, by `-m` expression: each keeps the deployment's status (the history keeps each apart)."""
ON_EVERY_CONTRACT_TEST = ("llmval", "nightly")
"""Markers every contract test carries (fixtures/options.py adds them)."""
MAX_FREE_MARKERS = 10
"""An expression naming more other markers than this is not compared by its truth table (2**10 rows)."""
PARTIAL = "partial"
PARTIAL_DIR = "partial"
"""Where a partial run's record goes, under the reports folder."""
REPLAY_DIR = "replay"
"""Where a replay's record goes, under the reports folder (a partial replay's: under its `partial/`)."""


@dataclass(frozen=True)
class Selection:
    """How a run picked its tests (what `pytest_configure` can read from the options)."""

    markexpr: str = ""
    keyword: str = ""
    paths: tuple[str, ...] = ()
    """Paths or node ids narrower than the whole contract, as given (relative to the contract where inside it)."""
    last_failed: bool = False
    stepwise: bool = False
    deselect: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunScope:
    """The scope of one run: `nightly`, `smoke` or `partial` (then `selection` says what narrowed it)."""

    name: str
    selection: str = ""

    @property
    def is_partial(self) -> bool:
        return self.name == PARTIAL

    @property
    def is_full(self) -> bool:
        """The whole contract: only such a run can say every declared fact was judged."""
        return self.name == "nightly"

    def describe(self) -> str:
        """`all checks`, `-m smoke`, or `partial: <what narrowed it>`."""
        if self.is_partial:
            return f"partial: {self.selection}"
        return "all checks" if self.is_full else f"-m {self.name}"


FULL = RunScope("nightly")
"""The whole contract."""


_TOKEN = re.compile(r"\s*(\(|\)|(?:\w|:|\+|-|\.|\[|\]|\\|/)+)")
"""pytest's `-m` tokens: parentheses and identifiers (`and`, `or`, `not` among them)."""


def _compile(markexpr: str) -> tuple[Callable[[dict[str, bool]], bool], set[str]] | None:
    """`-m`'s grammar (or, and, not, parentheses, marker names) as a function of the markers' truth, and the names
    it reads; None for anything else (marker arguments, a syntax error): such an expression is not compared."""
    tokens, position = [], 0
    while position < len(markexpr.rstrip()):
        found = _TOKEN.match(markexpr, position)
        if found is None:
            return None
        tokens.append(found[1])
        position = found.end()
    names: set[str] = set()
    at = 0

    def peek() -> str | None:
        return tokens[at] if at < len(tokens) else None

    def take() -> str:
        nonlocal at
        at += 1
        return tokens[at - 1]

    def disjunction() -> Callable[[dict[str, bool]], bool]:
        parts = [conjunction()]
        while peek() == "or":
            take()
            parts.append(conjunction())
        return lambda truth: any(p(truth) for p in parts)

    def conjunction() -> Callable[[dict[str, bool]], bool]:
        parts = [negation()]
        while peek() == "and":
            take()
            parts.append(negation())
        return lambda truth: all(p(truth) for p in parts)

    def negation() -> Callable[[dict[str, bool]], bool]:
        token = peek()
        if token is None or token in ("and", "or", ")"):
            raise ValueError(markexpr)
        take()
        if token == "not":
            inner = negation()
            return lambda truth: not inner(truth)
        if token == "(":
            inner = disjunction()
            if peek() != ")":
                raise ValueError(markexpr)
            take()
            return inner
        names.add(token)
        return lambda truth: truth[token]

    try:
        function = disjunction() if tokens else (lambda truth: True)
    except ValueError:
        return None
    return (function, names) if at == len(tokens) else None


def on_the_contract(markexpr: str) -> str:
    """The declared scope's `-m` that `markexpr` equals on the contract's tests (every one marked
    `ON_EVERY_CONTRACT_TEST`), else `markexpr` itself.

    >>> on_the_contract("smoke or not llmval"), on_the_contract("(not llmval) or nightly"), on_the_contract("perf")
    ('smoke', '', 'perf')
    """
    if markexpr in SCOPES:
        return markexpr
    compiled = _compile(markexpr)
    if compiled is None:
        return markexpr
    function, names = compiled
    free = sorted((names | {"smoke"}) - set(ON_EVERY_CONTRACT_TEST))
    if len(free) > MAX_FREE_MARKERS:
        return markexpr
    rows = [dict(zip(free, values, strict=True), **dict.fromkeys(ON_EVERY_CONTRACT_TEST, True))
            for values in itertools.product((False, True), repeat=len(free))]
    for declared, selects in (("", lambda truth: True), ("smoke", lambda truth: truth["smoke"])):
        if all(function(row) == selects(row) for row in rows):
            return declared
    return markexpr


def scope_of(selection: Selection) -> RunScope:
    """The scope a run of `selection` judges."""
    narrowed = []
    markexpr = on_the_contract(selection.markexpr)
    if markexpr not in SCOPES:
        narrowed.append(f"-m {shlex.quote(selection.markexpr)}")
    if selection.keyword:
        narrowed.append(f"-k {shlex.quote(selection.keyword)}")
    narrowed += ["--lf"] * selection.last_failed + ["--sw"] * selection.stepwise
    narrowed += [f"--deselect {d}" for d in selection.deselect] + [f"--ignore {i}" for i in selection.ignore]
    narrowed += list(selection.paths)
    if narrowed:
        return RunScope(PARTIAL, ", ".join(narrowed))
    return RunScope(SCOPES[markexpr])


def recorded_scope(name: str, selection: str, markexpr: str) -> RunScope:
    """The scope a run recorded (`scope`, `selection`); one recorded before scopes were is judged by its `-m`."""
    if name:
        return RunScope(name, selection)
    return scope_of(Selection(markexpr=markexpr))


def scope_of_document(document: dict) -> RunScope:
    """The scope of a results document; one written before scopes were recorded is judged by its `-m`."""
    name = document.get("scope")
    return recorded_scope(name if isinstance(name, str) else "", str(document.get("selection") or ""),
                          str(document.get("markexpr") or ""))


def record_dir(reports_dir: Path, scope: RunScope, *, replayed: bool) -> Path:
    """Where a run's status, report.html and history go: the reports folder for a live run of a declared scope
    (the deployment's status), `partial/` for a live partial run, `replay/` (`replay/partial/`) for a replay.

    >>> [str(record_dir(Path("reports"), s, replayed=r)) for s in (FULL, RunScope(PARTIAL, "-k x")) for r in (0, 1)]
    ['reports', 'reports/replay', 'reports/partial', 'reports/replay/partial']
    """
    folder = Path(reports_dir) / REPLAY_DIR if replayed else Path(reports_dir)
    return folder / PARTIAL_DIR if scope.is_partial else folder
