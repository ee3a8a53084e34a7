"""The results JSON of a run: one record per test with its verdicts, evidence and measured values."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

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


def write_results(reports_dir: Path, *, inventory_path: str, deployment: str, started: dt.datetime,
                  duration_s: float, mode: str, markexpr: str, exitstatus: int,
                  results: list[TestResult]) -> Path:
    """Write reports/results.json and a timestamped copy under reports/history/; return the main path."""
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
    reports_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    history = reports_dir / HISTORY_DIR
    history.mkdir(exist_ok=True)
    (history / f"results-{started.strftime('%Y%m%dT%H%M%SZ')}-{deployment}.json").write_text(text)
    path = reports_dir / RESULTS_FILE
    path.write_text(text)
    return path


def load_results(path: Path) -> dict:
    """Read a results JSON written by write_results."""
    return json.loads(path.read_text(encoding="utf-8"))
