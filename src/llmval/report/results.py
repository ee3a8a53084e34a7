"""The results JSON of a run: one record per test with its verdicts, evidence and measured values.

`reports/results.json` is the latest run; `reports/history/results-<UTC time>-<deployment>.json` keeps
every run, so the status document can say what changed since the previous run of the same deployment.
Added keys are optional for readers: `inventory_snapshot` (the validated inventory, secrets removed),
`blockers` (what each declared blocker did this run) and, per test, `blockers` (the blockers it showed).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import LlmvalError, ParseError
from ..core.files import read_regular_text
from ..core.jsontext import read_json
from ..core.verdict import Cause, Measured, Verdict
from .scope import RunScope, recorded_scope, scope_of_document

RESULTS_FILE = "results.json"
HISTORY_DIR = "history"
SCHEMA_VERSION = 3
"""2: per test `verdicts` (llmval.core.verdict.Verdict) replace version 1's `evidence` records. 3: per test
`skip_reason`, `xfail_reason` and `crash` (from pytest's report, typed), per verdict `paths` (the files its host
facts read); the reports read these fields instead of the message text."""


class BlockerRecord(BaseModel):
    """What one test showed about one declared blocker."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    check: str
    target: str
    state: str
    """holds (the check still fails) or lifted (it passes now)."""
    observed: str = ""


class TestResult(BaseModel):
    """What one contract test concluded."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(extra="forbid")

    nodeid: str
    outcome: str = ""
    """passed, failed, error, skipped, xfailed or xpassed; `error` is could not check."""
    message: str = ""
    """pytest's text of the outcome (shortened), for people: the reports classify nothing by it."""
    skip_reason: str = ""
    """For a skipped test: pytest's skip reason."""
    xfail_reason: str = ""
    """For an xfailed or xpassed test: the xfail reason (a known blocker's, or the test's own)."""
    crash: str = ""
    """For a failed test: pytest's one-line crash message (`assert 1 == 2`, `ValueError: boom`), where no verdict
    explains the failure."""
    error_type: str = ""
    """For a failed or errored test: what junit's `type` says (`ContractBroken`, a could-not-check's error such as
    `ModelNotServed`, `BlockerLifted`, else the exception's class: `AssertionError`)."""
    duration_s: float = 0.0
    markers: list[str] = Field(default_factory=list)
    verdicts: list[Verdict] = Field(default_factory=list)
    """Each `expect` call, and the could-not-check verdict of an error."""
    measured: list[Measured] = Field(default_factory=list)
    blockers: list[BlockerRecord] = Field(default_factory=list)
    """Each declared blocker this test showed."""

    @property
    def failing(self) -> Verdict | None:
        """The verdict that failed the test (last broken, could-not-check or blocked one), if any."""
        bad = [v for v in self.verdicts if v.cause != Cause.HELD]
        return bad[-1] if bad else None

    @property
    def is_lifted(self) -> bool:
        return any(b.state == "lifted" for b in self.blockers)


class RootCause(BaseModel):
    """One root cause of a run that is not GREEN (llmval.report.status.root_causes): the check, what was expected
    and seen, the fix, and the tests it explains (its dependents and the other checks of its shared cause)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: str
    target: str
    cause: Cause
    test: str
    expected: str = ""
    observed: str = ""
    hint: str = ""
    evidence: str = ""
    error: str = ""
    explains: list[str] = Field(default_factory=list)


class RunResults(BaseModel):
    """A whole results document (reports/results.json), typed."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    deployment: str = ""
    inventory: str = ""
    started: str = ""
    duration_s: float = 0.0
    mode: str = ""
    markexpr: str = ""
    scope: str = ""
    """nightly (the whole contract), smoke, or partial (llmval.report.scope); empty in documents written before."""
    selection: str = ""
    """For a partial run: what narrowed it (`-k kv_cache`, `--lf`, a node id)."""
    exitstatus: int = 1
    counts: dict[str, int] = Field(default_factory=dict)
    """Tests per outcome: `failed` is a broken contract, `error` could not check."""
    causes: dict[str, int] = Field(default_factory=dict)
    """Tests per deciding verdict cause: held, broken, could-not-check, blocked."""
    tests: list[TestResult] = Field(default_factory=list)
    inventory_snapshot: dict[str, Any] | None = None
    not_judged: list[str] | None = None
    """In a full run: declared inventory facts no verdict judged (llmval.report.judged); None when not computed."""
    problems: list[str] = Field(default_factory=list)
    """What went wrong outside any test (a test module that did not collect, a recording or report that could not
    be written, an interruption): the root cause of a run that is not GREEN though no test failed."""
    root_causes: list[RootCause] | None = None
    """What broke first, in the order to fix it (never empty in a run that is not GREEN); None in documents written
    before it was kept."""

    @property
    def run_scope(self) -> RunScope:
        """What part of the contract this run judged (llmval.report.scope)."""
        return recorded_scope(self.scope, self.selection, self.markexpr)


def readable_version(document: dict) -> int:
    """The document's `schema_version` (1 where absent: the first documents had none), or an LlmvalError saying
    why it cannot be read: a version this llmval does not know (a newer llmval wrote it) or one that is no number.
    Every reader of results documents (the reports, `llmval trend`, the Prometheus textfile) comes through here."""
    version = document.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise LlmvalError(f"schema_version {version!r} is not a results schema version (1 to {SCHEMA_VERSION}); "
                          f"{NOT_RESULTS_FIX}")
    if version > SCHEMA_VERSION:
        raise LlmvalError(f"results schema_version {version} was written by a newer llmval; this one "
                          f"reads versions 1 to {SCHEMA_VERSION}: upgrade llmval to read it")
    return version


def upgrade_document(document: dict) -> dict:
    """A results document in the current schema: version 1's `evidence` records become verdicts; version 2's skip
    and xfail reasons, which it kept only as the first line of `message`, become `skip_reason`/`xfail_reason`
    (the one place old message text is read)."""
    version = readable_version(document)
    if version >= SCHEMA_VERSION:
        return document
    upgraded = dict(document, schema_version=SCHEMA_VERSION)
    tests = []
    for test in document.get("tests", []):
        test = dict(test)
        if version < 2:
            records = test.pop("evidence", [])
            test["verdicts"] = [{"target": str(r.get("subject", "")), "check": str(r.get("check", "")),
                                 "expected": str(r.get("expected", "")), "observed": str(r.get("observed", "")),
                                 "evidence": str(r.get("evidence", "")),
                                 "cause": "held" if r.get("ok") else ("blocked" if test.get("outcome") == "xfailed"
                                                                      else "broken")} for r in records]
            test["measured"] = [{"target": str(m.get("subject", "")), "name": str(m.get("name", "")),
                                 "value": m.get("value", ""), "unit": m.get("unit") or ""}
                                for m in test.get("measured", [])]
            test["blockers"] = [{"id": b.get("id", ""), "check": b.get("check", ""),
                                 "target": b.get("subject", b.get("target", "")), "state": b.get("state", ""),
                                 "observed": b.get("observed", "")} for b in test.get("blockers", [])]
        first = next((line.strip() for line in str(test.get("message", "")).splitlines() if line.strip()), "")
        if test.get("outcome") == "skipped" and "skip_reason" not in test:
            test["skip_reason"] = first.removeprefix("Skipped: ")
        if test.get("outcome") in {"xfailed", "xpassed"} and "xfail_reason" not in test:
            test["xfail_reason"] = first.removeprefix("xfail: ")
        tests.append(test)
    upgraded["tests"] = tests
    return upgraded


def parse_results(document: dict | RunResults) -> RunResults:
    """The typed results of a document (either schema version); an invalid one is an LlmvalError."""
    if isinstance(document, RunResults):
        return document
    try:
        return RunResults.model_validate(upgrade_document(document))
    except ValidationError as error:
        raise LlmvalError(f"not a results document: {error}") from None


def run_results(*, inventory_path: str, deployment: str, started: dt.datetime, duration_s: float, mode: str,
                markexpr: str, exitstatus: int, results: list[TestResult], inventory_snapshot: dict | None = None,
                not_judged: list[str] | None = None, scope: str = "", selection: str = "",
                problems: list[str] = ()) -> RunResults:
    """The typed results of a run: what status.md, report.html, junit and results.json are all made from."""
    counts: dict[str, int] = {}
    causes: dict[str, int] = {}
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
        if result.verdicts:
            cause = str((result.failing or result.verdicts[-1]).cause)
            causes[cause] = causes.get(cause, 0) + 1
    return RunResults(schema_version=SCHEMA_VERSION, deployment=deployment, inventory=inventory_path,
                      started=started.isoformat(timespec="seconds"), duration_s=duration_s, mode=mode,
                      markexpr=markexpr, scope=scope, selection=selection, exitstatus=exitstatus, counts=counts,
                      causes=causes, tests=sorted(results, key=lambda r: r.nodeid),
                      inventory_snapshot=inventory_snapshot, not_judged=not_judged, problems=list(problems))


def document_of(results: RunResults) -> dict:
    """The results JSON document of typed results (keys that say nothing, an empty scope or no snapshot, left out)."""
    document = results.model_dump(mode="json")
    for key in ("scope", "selection"):
        if not document.get(key):
            document.pop(key, None)
    for key in ("inventory_snapshot", "not_judged", "root_causes"):
        if document.get(key) is None:
            document.pop(key, None)
    if not document.get("problems"):
        document.pop("problems", None)
    return document


def results_document(**fields: Any) -> dict:
    """The results JSON document as a dict (`run_results`' fields; what write_results writes)."""
    return document_of(run_results(**fields))


def write_results(reports_dir: Path, *, inventory_path: str, deployment: str, started: dt.datetime,
                  duration_s: float, mode: str, markexpr: str, exitstatus: int,
                  results: list[TestResult], inventory_snapshot: dict | None = None) -> Path:
    """Write reports/results.json and a timestamped copy under reports/history/; return the main path."""
    run = run_results(
        inventory_path=inventory_path, deployment=deployment, started=started, duration_s=duration_s, mode=mode,
        markexpr=markexpr, exitstatus=exitstatus, results=results, inventory_snapshot=inventory_snapshot)
    return write_document(reports_dir, run, started)


def write_document(reports_dir: Path, document: RunResults | dict, started: dt.datetime) -> Path:
    """Write typed results (or an already-built document) as results.json and into history/ (each atomically,
    never through a link: llmval.report.files); return the main path. ReportsNotWritable when the folder cannot
    take them."""
    from .files import check_reports_dir, write_bytes

    if isinstance(document, RunResults):
        document = document_of(document)
    check_reports_dir(reports_dir, (HISTORY_DIR,))
    data = document_bytes(document)
    history = reports_dir / HISTORY_DIR
    stem = f"results-{started.strftime('%Y%m%dT%H%M%SZ')}-{document['deployment']}"
    target, n = history / f"{stem}.json", 1
    while target.exists() or target.is_symlink():  # two runs in one second keep both
        n += 1
        target = history / f"{stem}.{n:02d}.json"
    write_bytes(target, data)  # atomic: a full disk leaves no half-written history file
    return write_bytes(reports_dir / RESULTS_FILE, data)


def document_bytes(document: dict) -> bytes:
    """A results document as results.json holds it: JSON indented by 2, UTF-8, NaN and infinities as Python's json
    writes them. pydantic-core's serializer writes the same text as `json.dumps(indent=2, ensure_ascii=False)`
    (floats may be spelled shorter, `1e-7` for `1e-07`), 17x faster: the 5 MB of a 256-host smoke took 2.0 s in
    json's pure-Python indenting encoder, 0.12 s here (issue 35). A lone surrogate (from a server's JSON), which it
    refuses, takes json's path and is written as its JSON escape, so it reads back as it was."""
    try:
        return pydantic_core.to_json(document, indent=2, inf_nan_mode="constants") + b"\n"
    except pydantic_core.PydanticSerializationError:
        return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


MAX_RESULTS_BYTES = 64 * 2**20
"""The largest results JSON read (a 64-host run's is a few MB)."""
MAX_RESULTS_VALUES = 4_000_000
"""The most JSON values read of one (a 256-host run's holds about 250,000; 4 M of the worst shape parse to about
300 MiB)."""


NOT_RESULTS_FIX = ("expected the results.json a contract run writes (reports/results.json, reports/history/): "
                   "name such a file, or run the contract again (pytest -m smoke) to write one")
"""What to do about a file that is no readable results document: every reader of one says it the same way."""


def load_results(path: Path) -> dict:
    """Read a results JSON written by write_results; a missing or malformed file is an LlmvalError."""
    try:
        document = read_json(read_regular_text(path, MAX_RESULTS_BYTES), str(path),  # regular files only (history/)
                             max_chars=MAX_RESULTS_BYTES, max_values=MAX_RESULTS_VALUES, allow_nan=True)
    except FileNotFoundError:
        raise LlmvalError(f"no results JSON at {path}: run the contract first (pytest -m smoke)") from None
    except ParseError as error:
        raise LlmvalError(f"cannot read results JSON {path}: {error.reason}; {NOT_RESULTS_FIX}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise LlmvalError(f"cannot read results JSON {path}: {error}; {NOT_RESULTS_FIX}") from None
    if not isinstance(document, dict) or "tests" not in document or "deployment" not in document:
        raise LlmvalError(f"{path} is not a results JSON (no 'deployment'/'tests' keys); {NOT_RESULTS_FIX}")
    try:
        return upgrade_document(document)
    except LlmvalError as error:
        raise LlmvalError(f"cannot read results JSON {path}: {error}") from None


def history_files(reports_dir: Path, deployment: str) -> list[Path]:
    """This deployment's past results under reports/history/, oldest first (by start time, then write time)."""
    history = Path(reports_dir) / HISTORY_DIR
    if not history.is_dir():
        return []
    files = [p for p in history.glob("results-*.json") if p.stem.split("-", 2)[-1].split(".")[0] == deployment]
    return sorted(files, key=lambda p: (p.name.split("-")[1], p.stat().st_mtime_ns, p.name))


PREVIOUS_SCAN = 200
"""How many history files, newest first, are read to find the previous run of a scope (hourly smoke runs
between nightly ones)."""


def previous_results(reports_dir: Path, deployment: str, scope: RunScope | None = None, *,
                     replayed: bool | None = None, passed_over: list[str] | None = None) -> tuple[Path, dict] | None:
    """The latest readable past results of `deployment` (call before writing this run's), or None; with
    `scope`, the latest of that scope (a partial one: of the same selection); with `replayed`, only replays
    (True) or only live runs (False): a live run is compared with live runs (a history written before replays
    went to reports/replay/ may hold them). `passed_over` receives, for each newer file that could not be read
    (over the size cap, not JSON, not a regular file), its name and why, so the run can say so."""
    for path in list(reversed(history_files(reports_dir, deployment)))[:PREVIOUS_SCAN]:
        try:
            document = load_results(path)
        except LlmvalError as error:
            if passed_over is not None:  # the reason alone: its path and OSError's errno are said already
                why = str(error).splitlines()[0].split(f"{path}: ", 1)[-1].removesuffix(f"; {NOT_RESULTS_FIX}")
                why = re.sub(r"^\[Errno \d+\] |: '[^']*'$", "", why)
                passed_over.append(f"history/{path.name}: {why[:200]}")
            continue
        if replayed is not None and (document.get("mode") == "replay") != replayed:
            continue
        if scope is None or scope_of_document(document) == scope:
            return path, document
    return None
