"""Two runs on one `--reports` folder never mix their reports (issue 45.6, `llmval.report.files.reports_lock`).

Before: a GREEN and a RED run started together left results.json and status.md of one beside junit.xml of the
other (1 pair in 5). Now a run writes its whole set (pytest's junit.xml, results.json and its history copy,
status.md, report.html) holding the folder's lock, so the other waits and then writes its own whole set; history/
keeps both runs.

Each run is the contract's reachability test plus a planted check (this machine only), GREEN or RED by an
environment variable: no replay, so the reports stay where a live run writes them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmval.report.files import LOCK_FILE, ReportsNotWritable, reports_lock
from selftest.strategies import ROOT

INVENTORY = ROOT / "selftest" / "data" / "inventories" / "report-blockers.toml"
PLANTED = '''
import os


def test_holds(expect):
    if os.environ.get("LLMVAL_SELFTEST_RAN"):
        open(os.environ["LLMVAL_SELFTEST_RAN"], "w").close()
    expect("localhost", "selftest.reports.same", expected=1, observed=int(os.environ["LLMVAL_SELFTEST_OBSERVED"]))
'''


def _start(folder: Path, reports: Path, *, green: bool) -> subprocess.Popen:
    (folder / "test_planted.py").write_text(PLANTED)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LLMVAL_"))}
    env["LLMVAL_SELFTEST_OBSERVED"] = "1" if green else "2"
    env["LLMVAL_SELFTEST_RAN"] = str(folder / "ran")
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir",
                             str(ROOT), "-c", str(ROOT / "pyproject.toml"), "--inventory", str(INVENTORY),
                             "--reports", str(reports), str(ROOT / "tests" / "hosts" / "test_reachable.py"),
                             str(folder / "test_planted.py")],
                            cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _set_of(reports: Path) -> dict[str, str]:
    """Which run (GREEN or RED) each report of the folder is of."""
    status = re.search(r"Verdict: \*\*(GREEN|RED)\*\*", (reports / "partial" / "status.md").read_text())
    html = (reports / "partial" / "report.html").read_text()
    failures = int(re.search(r'failures="(\d+)"', (reports / "junit.xml").read_text())[1])
    return {
        "results.json": "GREEN" if json.loads((reports / "results.json").read_text())["exitstatus"] == 0 else "RED",
        "partial/results.json": "GREEN" if json.loads((reports / "partial" / "results.json").read_text())[
            "exitstatus"] == 0 else "RED",
        "partial/status.md": status[1] if status else "?",
        "partial/report.html": "GREEN" if ">GREEN<" in html else "RED" if ">RED<" in html else "?",
        "junit.xml": "GREEN" if failures == 0 else "RED",
    }


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_green_and_a_red_run_started_together_leave_one_runs_set_and_both_in_history(tmp_path):
    reports = tmp_path / "reports"
    pairs = 3
    for pair in range(pairs):
        folders = [tmp_path / f"green-{pair}", tmp_path / f"red-{pair}"]
        for folder in folders:
            folder.mkdir()
        runs = [_start(folders[0], reports, green=True), _start(folders[1], reports, green=False)]
        outputs = [run.communicate(timeout=180)[0] for run in runs]
        assert [run.returncode for run in runs] == [0, 1], [o[-2000:] for o in outputs]
        kept = _set_of(reports)
        assert len(set(kept.values())) == 1, f"pair {pair}: reports of two runs mixed: {kept}"
    history = sorted((reports / "partial" / "history").glob("results-*.json"))
    assert len(history) == 2 * pairs, history
    assert sorted(json.loads(p.read_text())["exitstatus"] for p in history) == [0] * pairs + [1] * pairs


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_run_waits_for_the_folder_lock_and_then_writes_its_whole_set(tmp_path):
    """Deterministic: while this process holds the lock, the run finishes its checks but writes no report; once
    the lock is let go it writes all of them."""
    reports = tmp_path / "reports"
    reports.mkdir()
    folder = tmp_path / "run"
    folder.mkdir()
    with reports_lock(reports):
        run = _start(folder, reports, green=True)
        deadline = time.monotonic() + 60
        while not (folder / "ran").exists() and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)  # bounded polling for the run's last check
        assert (folder / "ran").exists(), run.communicate()[0][-2000:]
        time.sleep(2)  # its last check ran: it is at the session's end, waiting for the lock
        assert run.poll() is None, run.communicate()[0][-2000:]
        assert not (reports / "results.json").exists() and not (reports / "junit.xml").exists()
    output = run.communicate(timeout=120)[0]
    assert run.returncode == 0, output[-2000:]
    assert set(_set_of(reports).values()) == {"GREEN"}


def test_the_lock_excludes_writers_and_lets_readers_share(tmp_path):
    def refused(shared: bool) -> bool:
        try:
            with reports_lock(tmp_path, shared=shared, wait_s=0.2):
                return False
        except ReportsNotWritable as error:
            assert "another run kept its lock" in str(error) and "for 0.2 s" in str(error), str(error)
            return True

    with reports_lock(tmp_path):  # a writer: no other writer, no reader
        assert refused(shared=False) and refused(shared=True)
    with reports_lock(tmp_path, shared=True):  # a reader: other readers, no writer
        assert not refused(shared=True) and refused(shared=False)
    assert not refused(shared=False)  # let go
    assert (tmp_path / LOCK_FILE).is_file()


def test_a_lock_file_planted_as_a_link_is_refused_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    (tmp_path / LOCK_FILE).symlink_to(target)
    with pytest.raises(ReportsNotWritable, match=r"its lock .* cannot be opened"), reports_lock(tmp_path):
        pass
    assert not target.exists()
