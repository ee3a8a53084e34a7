"""The results JSON of a run: one record per test with its verdicts, evidence and measured values.

`reports/results.json` is the latest run; `reports/history/results-<UTC time>-<deployment>.json` keeps
every run, so the status document can say what changed since the previous run of the same deployment.
Added keys are optional for readers: `inventory_snapshot` (the validated inventory, secrets removed),
`blockers` (what each declared blocker did this run) and, per test, `blockers` (the blockers it showed).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

from .errors import LlmvalError

RESULTS_FILE = "results.json"
HISTORY_DIR = "history"
SCHEMA_VERSION = 1


@dataclasses.dataclass
class TestResult:
    """What one contract test concluded."""

    __test__ = False  # not a pytest test class

    nodeid: str
    outcome: str = ""
    """passed, failed, error, skipped, xfailed or xpassed."""
    message: str = ""
    duration_s: float = 0.0
    markers: list[str] = dataclasses.field(default_factory=list)
    evidence: list[dict] = dataclasses.field(default_factory=list)
    """Each `expect` call: subject, check, expected, observed, ok."""
    measured: list[dict] = dataclasses.field(default_factory=list)
    """Each measured value: subject, name, value, unit."""
    blockers: list[dict] = dataclasses.field(default_factory=list)
    """Each declared blocker this test showed: id, check, subject, state (holds or lifted)."""


def results_document(*, inventory_path: str, deployment: str, started: dt.datetime, duration_s: float,
                     mode: str, markexpr: str, exitstatus: int, results: list[TestResult],
                     inventory_snapshot: dict | None = None) -> dict:
    """The results JSON document as a dict (what write_results writes)."""
    counts: dict[str, int] = {}
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    document = {
        "schema_version": SCHEMA_VERSION,
        "deployment": deployment,
        "inventory": inventory_path,
        "started": started.isoformat(timespec="seconds"),
        "duration_s": duration_s,
        "mode": mode,
        "markexpr": markexpr,
        "exitstatus": exitstatus,
        "counts": counts,
        "tests": [dataclasses.asdict(r) for r in sorted(results, key=lambda r: r.nodeid)],
    }
    if inventory_snapshot is not None:
        document["inventory_snapshot"] = inventory_snapshot
    return document


def write_results(reports_dir: Path, *, inventory_path: str, deployment: str, started: dt.datetime,
                  duration_s: float, mode: str, markexpr: str, exitstatus: int,
                  results: list[TestResult], inventory_snapshot: dict | None = None) -> Path:
    """Write reports/results.json and a timestamped copy under reports/history/; return the main path."""
    document = results_document(
        inventory_path=inventory_path, deployment=deployment, started=started, duration_s=duration_s, mode=mode,
        markexpr=markexpr, exitstatus=exitstatus, results=results, inventory_snapshot=inventory_snapshot)
    return write_document(reports_dir, document, started)


def write_document(reports_dir: Path, document: dict, started: dt.datetime) -> Path:
    """Write an already-built results document as results.json and into history/; return the main path."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    history = reports_dir / HISTORY_DIR
    history.mkdir(exist_ok=True)
    stem = f"results-{started.strftime('%Y%m%dT%H%M%SZ')}-{document['deployment']}"
    target, n = history / f"{stem}.json", 1
    while target.exists():  # two runs in one second keep both
        n += 1
        target = history / f"{stem}.{n:02d}.json"
    target.write_text(text, encoding="utf-8")
    path = reports_dir / RESULTS_FILE
    path.write_text(text, encoding="utf-8")
    return path


def load_results(path: Path) -> dict:
    """Read a results JSON written by write_results; a missing or malformed file is an LlmvalError."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LlmvalError(f"no results JSON at {path}: run the contract first (pytest -m smoke)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LlmvalError(f"cannot read results JSON {path}: {error}") from None
    if not isinstance(document, dict) or "tests" not in document or "deployment" not in document:
        raise LlmvalError(f"{path} is not a results JSON (no 'deployment'/'tests' keys)")
    return document


def history_files(reports_dir: Path, deployment: str) -> list[Path]:
    """This deployment's past results under reports/history/, oldest first (by start time, then write time)."""
    history = Path(reports_dir) / HISTORY_DIR
    if not history.is_dir():
        return []
    files = [p for p in history.glob("results-*.json") if p.stem.split("-", 2)[-1].split(".")[0] == deployment]
    return sorted(files, key=lambda p: (p.name.split("-")[1], p.stat().st_mtime_ns, p.name))


def previous_results(reports_dir: Path, deployment: str) -> tuple[Path, dict] | None:
    """The latest readable past results of `deployment` (call before writing this run's), or None."""
    for path in reversed(history_files(reports_dir, deployment)):
        try:
            return path, load_results(path)
        except LlmvalError:
            continue
    return None
