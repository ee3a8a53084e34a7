"""The reachability check and a planted test module run in a child pytest (pytester) against the self-tests'
inventories: what the report self-tests share."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from selftest.strategies import ROOT

INVENTORIES = ROOT / "selftest" / "data" / "inventories"


REACHABLE = ROOT / "tests" / "hosts" / "test_reachable.py"


def run_with(pytester: pytest.Pytester, planted: str, inventory: Path, *args: str) -> pytest.RunResult:
    """The contract's reachability test plus `planted` (a test module), reports into pytester.path/reports."""
    pytester.makepyfile(test_planted=planted)
    pytester.chdir()
    return pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "--inventory", str(inventory),
                        "--reports", str(pytester.path / "reports"), str(REACHABLE),
                        str(pytester.path / "test_planted.py"), *args, timeout=300)
