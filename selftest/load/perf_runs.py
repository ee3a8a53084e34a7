"""The perf contract (tests/perf) run by pytest in a child process (pytester): what the perf-plugin self-tests share."""

from __future__ import annotations

import sys

import pytest

from selftest.strategies import ROOT


def run_perf(pytester: pytest.Pytester, *args: str, timeout: int = 120) -> pytest.RunResult:
    pytester.chdir()
    return pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
                        "-c", str(ROOT / "pyproject.toml"), "--reports", str(pytester.path / "reports"),
                        str(ROOT / "tests" / "perf"), *args, timeout=timeout)
