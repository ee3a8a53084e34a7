"""Replaying a REAL smoke recording through the contract in a child pytest, and reading its verdicts: shared by the
REAL H200 replays of vLLM (test_real_h200.py) and SGLang (test_real_h200_sglang.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from selftest.strategies import ROOT


def replay_smoke(pytester, recording: Path) -> dict:
    """`pytest -m smoke --replay recording` with the recording's inventory; its exit code, results.json and
    terminal output."""
    pytester.chdir()
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                          str(ROOT / "pyproject.toml"), "--reports", "reports", str(ROOT / "tests"), "-m", "smoke",
                          "-p", "no:xdist", "-p", "no:randomly", "--inventory", str(recording / "inventory.toml"),
                          "--replay", str(recording), timeout=300)
    return {"ret": result.ret, "results": json.loads((pytester.path / "reports" / "results.json").read_text()),
            "stdout": result.stdout.str()}


def verdicts_of(results: dict) -> dict[str, dict]:
    """Check id -> its verdict, over every test of a results.json."""
    return {v["check"]: v for t in results["tests"] for v in t.get("verdicts", [])}
