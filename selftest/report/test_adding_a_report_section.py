"""The "Adding a report section" walk-through (docs/adding-a-report-section.md), done for real on a copy of the
repository.

Its two changes (the "Slowest checks" section in `llmval.report.status`, and its self-test beside the seed
document's section list) are applied to the copy with `git apply`; then the copy runs what CI runs for such a
change (the status-document, escaping and secrets self-tests) and the host contract on the REAL-h200x2 replay,
whose status.md and report.html must both show the new section with the run's slowest test first. Exactly the
two files the page names change.
"""

from __future__ import annotations

import json
import sys

import pytest

from selftest.walkthrough import apply_patch, copy_repo, documented_steps, pytest_in, run_in, snapshot, touched

pytestmark = pytest.mark.subprocess  # a copy of the repository, and CI's self-tests run on it
CI_SELFTESTS = ["selftest/report/test_status.py", "selftest/report/test_escaping.py",
                "selftest/report/test_secrets_everywhere.py"]


def test_readme_walkthrough_adds_a_report_section_both_reports_show(tmp_path):
    steps = documented_steps("Adding a report section")
    assert len(steps) == 2 and all(s.is_patch for s in steps)
    repo = copy_repo(tmp_path)
    before = snapshot(repo)
    for step in steps:
        assert step.target in before and f"+++ b/{step.target}\n" in step.code
        applied = apply_patch(repo, step)
        assert applied.rc == 0, applied.tail()
    changed = touched(before, snapshot(repo))
    assert changed == {s.target for s in steps}, sorted(changed)

    lint = run_in(repo, sys.executable, "-m", "ruff", "check", *(s.target for s in steps))
    assert lint.rc == 0, lint.tail()
    ci = pytest_in(repo, "-rA", *CI_SELFTESTS, timeout_s=600)
    assert ci.rc == 0 and " passed" in ci.output, ci.tail()
    assert "PASSED selftest/report/test_status.py::test_slowest_checks_come_first_with_their_seconds" in ci.output

    reports = tmp_path / "reports"
    contract = pytest_in(repo, "--reports", str(reports), "--inventory", "selftest/data/inventories/h200x2.toml",
                         "--replay", "selftest/data/replays/hosts/REAL-h200x2", "tests/hosts")
    assert contract.rc in (0, 1), contract.tail()  # 1: the REAL stray python3 (see REAL-h200x2's README)
    folder = reports / "replay" / "partial"  # a replay of tests/hosts alone: a part of the contract
    results = json.loads((reports / "results.json").read_text())
    slowest = sorted(results["tests"], key=lambda t: (-t["duration_s"], t["nodeid"]))[0]
    status = (folder / "status.md").read_text()
    section = status.split("## Slowest checks\n")[1].split("\n## ")[0]
    first = next(line for line in section.splitlines() if line.startswith("| tests/"))
    assert first.endswith(f" | {slowest['outcome']} | {slowest['duration_s']:.1f} |"), section
    assert first.startswith("| " + slowest["nodeid"].split("[")[0]), section
    assert "<h2>Slowest checks</h2>" in (folder / "report.html").read_text()
