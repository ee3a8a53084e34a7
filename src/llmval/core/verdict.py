"""The typed verdict: what one check concluded, carried unchanged from `expect` to every report.

`expect(...)` (fixtures/evidence.py) makes a `Verdict`; a check that could not be made (an `LlmvalError`)
makes one too. The same model is written to results.json (`llmval.report.results`), to junit (testcase properties
`host`, `check`, `expected`, `observed`, `hint`) and read by the status document and report.html
(`llmval.report`). Nothing is scraped back out of message text.

    Verdict(target="kpro6-ct129", check="hosts.gpu.count", expected="4", observed="3",
            hint="nvidia-smi -L", cause=Cause.BROKEN, depends_on=("hosts.reachable",))

`depends_on` names checks that must hold for this one to mean anything (the model served, the endpoint
healthy, the host reachable): the status document puts each root failure first and its dependents under it. The
checks' dependencies are a DAG (`llmval.core.dependencies.CHECKS`): an edge that would close a cycle is left out
of the verdict, so every failing run has a root cause.
`paths` are the files the check's host facts read (the typed path arguments of their declared commands), which
the status document lists under "Relevant files"; `cause` and `error` say how the reports classify it. The
reports read these fields, never the message text.

Secrets are removed once, where an observation becomes a verdict's text (`make_verdict`, `could_not_check`,
`make_measured`: redacted, then shortened, so a cut cannot leave part of a secret); the reports, results.json and
junit write that text as it is.
"""

from __future__ import annotations

import enum

from pydantic import BaseModel, ConfigDict, Field

from .contract import redact, shorten, visible
from .dependencies import CHECKS


class Cause(enum.StrEnum):
    """What a verdict says about the deployment."""

    HELD = "held"
    """The contract holds."""
    BROKEN = "broken"
    """The deployment broke the contract (a junit <failure>)."""
    COULD_NOT_CHECK = "could-not-check"
    """The suite could not judge: host unreachable, output unparseable, no answer (a junit <error>)."""
    BLOCKED = "blocked"
    """Broken, but by a known blocker the inventory declares (strict xfail)."""


FAILING = (Cause.BROKEN, Cause.COULD_NOT_CHECK)


class PathRead(BaseModel):
    """A file (or glob) a check read on a host: a typed path argument of a declared host command."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    path: str


class Verdict(BaseModel):
    """One check's conclusion about one target, with what was expected, what was seen and the fix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str = Field(description="host, endpoint or perf gate the check judged")
    check: str = Field(description="check id, `<area>.<subject>.<property>`")
    expected: str = ""
    observed: str = ""
    hint: str = Field("", description="how to fix it, or where to look")
    evidence: str = Field("", description="the raw observation the verdict rests on (shortened)")
    cause: Cause
    depends_on: tuple[str, ...] = Field((), description="check ids that must hold for this check to mean anything")
    error: str = Field("", description="for could-not-check: the error type (CommandTimeout, ModelNotServed)")
    reason: str = Field("", description="for could-not-check: the cause it shares with other checks, without its "
                                        "own target (the recording has no answer for POST /tokenize); empty when "
                                        "`observed` says it")
    paths: tuple[PathRead, ...] = Field((), description="files the check's host facts read, per host")

    @property
    def is_held(self) -> bool:
        return self.cause == Cause.HELD

    @property
    def is_failing(self) -> bool:
        """Broken or could not check (a blocked verdict is expected to fail and does not count)."""
        return self.cause in FAILING

    @property
    def shared_cause(self) -> str:
        """For could-not-check: the cause it shares with other checks (its reason, else what it observed); the
        reports count the checks of one shared cause as one root cause. Empty for the other causes."""
        return (self.reason or self.observed) if self.cause == Cause.COULD_NOT_CHECK else ""

    def message(self) -> str:
        """The failure text pytest shows: the mismatch block (`contract.mismatch`'s shape), or `could not check
        (Error): cause`; control characters written as escapes (`contract.visible`: what a server said cannot drive
        the terminal). The fields are already redacted and shortened: nothing is redacted or cut again here."""
        if self.cause == Cause.COULD_NOT_CHECK:
            return visible(f"could not check ({self.error or 'error'}): {self.observed}")
        lines = [f"[{self.target}] {self.check}", f"  expected: {self.expected}", f"  observed: {self.observed}"]
        lines += [f"  {name}: {value}" for name, value in (("hint", self.hint), ("evidence", self.evidence)) if value]
        return visible("\n".join(lines))

    def summary(self) -> str:
        """One short line for `-ra` and the terminal: check, target, observed (expected), control characters
        and newlines escaped."""
        if self.cause == Cause.COULD_NOT_CHECK:
            line = f"{self.check} [{self.target}] could not check ({self.error}): {shorten(self.observed, 160)}"
        else:
            line = (f"{self.check} [{self.target}] observed {shorten(self.observed, 100)} "
                    f"(expected {shorten(self.expected, 80)})")
        return visible(line).replace("\n", "\\n")


class Measured(BaseModel):
    """A measured value (tok/s, score, version) the reports show next to the verdicts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str
    name: str
    value: float | int | str
    unit: str = ""


def plain(value: object) -> str:
    """Text of an expected or observed value as the failure message shows it: strings as they are, the rest
    as their Python repr (`['glm-4.7-flash']`, `None`)."""
    return value if isinstance(value, str) else repr(value)


def make_verdict(target: object, check: str, *, expected: object, observed: object, held: bool, hint: str = "",
                 evidence: str = "", depends_on: tuple[str, ...] = (), paths: tuple[PathRead, ...] = ()) -> Verdict:
    """A held or broken verdict with its values as text, redacted once and then shortened (`contract.shorten`)."""
    return Verdict(target=str(target), check=check, expected=shorten(plain(expected)),
                   observed=shorten(plain(observed)), hint=redact(hint),
                   evidence=shorten(evidence, 800) if evidence else "",
                   cause=Cause.HELD if held else Cause.BROKEN, depends_on=CHECKS.declare(check, depends_on),
                   paths=tuple(paths))


def could_not_check(target: str, check: str, error: BaseException, *, depends_on: tuple[str, ...] = (),
                    paths: tuple[PathRead, ...] = ()) -> Verdict:
    """The verdict of a check the suite could not make; the error's own `depends_on` joins the declared ones."""
    extra = tuple(getattr(error, "depends_on", ()) or ())
    deps = CHECKS.declare(check, (*depends_on, *extra))
    reason = str(getattr(error, "reason", "") or "")
    return Verdict(target=target, check=check, observed=shorten(str(error), 1000),
                   hint=redact(str(getattr(error, "hint", "") or "")), cause=Cause.COULD_NOT_CHECK,
                   depends_on=deps, error=type(error).__name__, reason=shorten(reason, 1000) if reason else "",
                   paths=tuple(paths))


CLOCK_UNITS = frozenset({"ns", "us", "µs", "ms", "s", "min", "h"})
"""Units of a time measured by this run's clock; a rate per one of them (`tok/s`, `req/s`) is one too."""
NOT_MEASURED_IN_A_REPLAY = "not measured: a replay answers at its own pace, it has no timing of the deployment"


def is_timing(unit: str) -> bool:
    """Whether a value in `unit` is a time or a rate over time: what a replay cannot measure.

    >>> [is_timing(u) for u in ("ms", "tok/s", "tokens/step", "fraction", "")]
    [True, True, False, False, False]
    """
    unit = unit.strip()
    return unit in CLOCK_UNITS or ("/" in unit and unit.rpartition("/")[2] in CLOCK_UNITS)


def make_measured(target: object, name: str, value: float | int | str, unit: str = "") -> Measured:
    """A measured value with its text redacted once (a version string or a label can quote what a server said)."""
    return Measured(target=redact(str(target)), name=redact(name), value=redact(value) if isinstance(value, str)
                    else value, unit=redact(unit))


def deciding(verdicts: list[Verdict]) -> Verdict | None:
    """The verdict that decided a test: the last failing (or blocked) one, else the last one."""
    for cause in (Cause.COULD_NOT_CHECK, Cause.BROKEN, Cause.BLOCKED):
        hits = [v for v in verdicts if v.cause == cause]
        if hits:
            return hits[-1]
    return verdicts[-1] if verdicts else None
