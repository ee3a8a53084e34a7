"""Run `tests/hosts` in a subprocess (pytester) and read what it concluded from its results JSON."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from selftest.strategies import ROOT

REPLAYS = ROOT / "selftest" / "data" / "replays" / "hosts"
INVENTORIES = ROOT / "selftest" / "data" / "inventories"


def run_hosts(pytester: pytest.Pytester, *args: str, timeout: float = 300,
              in_repo_root: bool = False) -> tuple[pytest.RunResult, dict]:
    """Run the host contract (from pytester's folder, or from the repo root where relative inventory paths
    resolve); return the run and {nodeid: (outcome, message)} from results.json."""
    pytester.chdir()
    if in_repo_root:
        os.chdir(ROOT)  # pytester restores the working directory after the test
    reports = pytester.path / "reports"
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
                          "-c", str(ROOT / "pyproject.toml"), "--reports", str(reports),
                          str(ROOT / "tests" / "hosts"), *args, timeout=timeout)
    path = Path(reports / "results.json")
    tests = json.loads(path.read_text())["tests"] if path.exists() else []
    return result, {t["nodeid"]: (t["outcome"], t["message"]) for t in tests}


def not_passed(outcomes: dict) -> dict:
    """Tests that neither passed, were skipped, nor failed as a declared blocker: {short id: message}."""
    return {nodeid.split("::", 1)[1]: message for nodeid, (outcome, message) in outcomes.items()
            if outcome not in {"passed", "skipped", "xfailed"}}
