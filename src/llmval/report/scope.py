"""What part of the contract a run judged: the whole of it, a declared scope, or a part someone picked.

The deployment's status (`reports/status.md`, `report.html`, `results.json`, `history/`) is written only by runs
of a declared scope: `nightly` (the whole contract: all of it collected, no `-m` other than `nightly`) and
`smoke` (`-m smoke` over the whole contract: the owners' after-reboot run). Anything narrower (`-k`, `--lf`,
`--sw`, `--deselect`, `--ignore`, a file or node id, another `-m`) is a *partial* run: it says so in its verdict
line ("partial: -k kv_cache") and writes its own record under `reports/partial/`, so it never replaces the last
full status or enters the history as a full run.

    >>> scope_of(Selection(markexpr="smoke")).describe()
    '-m smoke'
    >>> scope_of(Selection(keyword="kv_cache", paths=("hosts/test_gpus.py",))).describe()
    'partial: -k kv_cache, hosts/test_gpus.py'
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

SCOPES = {"": "nightly", "nightly": "nightly", "smoke": "smoke"}
"""The declared scopes, by `-m` expression: each keeps the deployment's status (the history keeps each apart)."""
PARTIAL = "partial"
PARTIAL_DIR = "partial"
"""Where a partial run's record goes, under the reports folder."""


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


def scope_of(selection: Selection) -> RunScope:
    """The scope a run of `selection` judges."""
    narrowed = []
    if selection.markexpr not in SCOPES:
        narrowed.append(f"-m {shlex.quote(selection.markexpr)}")
    if selection.keyword:
        narrowed.append(f"-k {shlex.quote(selection.keyword)}")
    narrowed += ["--lf"] * selection.last_failed + ["--sw"] * selection.stepwise
    narrowed += [f"--deselect {d}" for d in selection.deselect] + [f"--ignore {i}" for i in selection.ignore]
    narrowed += list(selection.paths)
    if narrowed:
        return RunScope(PARTIAL, ", ".join(narrowed))
    return RunScope(SCOPES[selection.markexpr])


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
