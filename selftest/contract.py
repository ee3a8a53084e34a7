"""The contract (tests/) run by pytest in a child process from the repository root (pytester), its reports in a
temporary folder: what the plugin-level self-tests share."""

from __future__ import annotations

import sys

import pytest

from selftest.strategies import ROOT


def run_contract(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run the contract in tests/ from the repo root in a subprocess, reports into a temp folder."""
    pytester.chdir()
    return pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
                        "-c", str(ROOT / "pyproject.toml"), "--reports", str(pytester.path / "reports"),
                        str(ROOT / "tests"), *args, timeout=300)
