"""Report folders that cannot be turned (issue 23.5): planted links are replaced, never written through; a folder
that cannot be written is one clear error (exit 4) before any check runs; a disk that fills while the reports
are written leaves no half-written file and no stale GREEN.

Runs the contract's reachability test plus a planted passing test (selftest/data/inventories/report-blockers.toml,
this machine only). The read-only and full filesystems are real: a tmpfs mounted in a private mount namespace
(`unshare -m`, needs root or CAP_SYS_ADMIN; skipped where that is refused).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from selftest.strategies import ROOT

pytestmark = pytest.mark.netns  # read-only and full tmpfs in private mount namespaces
INVENTORY = ROOT / "selftest" / "data" / "inventories" / "report-blockers.toml"
PLANTED = '''
import os, pathlib


def test_holds(expect):
    pathlib.Path(os.environ["LLMVAL_SELFTEST_RAN"]).touch()
    expect("localhost", "selftest.reports.first", expected=1, observed=1)
'''
REPORTS = ("partial/status.md", "partial/report.html", "results.json", "junit.xml")
"""What a run of test_reachable.py + a planted test writes: a partial run (llmval.report.scope) keeps its status under
partial/; results.json and junit.xml are every run's."""


def _command(folder: Path, reports: Path) -> list[str]:
    (folder / "test_planted.py").write_text(PLANTED)
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(ROOT),
            "-c", str(ROOT / "pyproject.toml"), "--inventory", str(INVENTORY), "--reports", str(reports),
            str(ROOT / "tests" / "hosts" / "test_reachable.py"), str(folder / "test_planted.py")]


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LLMVAL_"))}
    env["LLMVAL_SELFTEST_RAN"] = str(folder / "ran")
    return env


def _run(folder: Path, reports: Path) -> subprocess.CompletedProcess:
    return subprocess.run(_command(folder, reports), cwd=folder, env=_env(folder), capture_output=True, text=True,
                          timeout=180)


def _in_private_mount(folder: Path, reports: Path, mount: str) -> subprocess.CompletedProcess:
    """The run in a private mount namespace where `mount` (shell lines) has prepared `reports`."""
    script = f"set -e\n{mount}\nexec {shlex.join(_command(folder, reports))}"
    return subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=folder, env=_env(folder),
                          capture_output=True, text=True, timeout=180)


def _can_mount(tmp_path: Path) -> bool:
    probe = tmp_path / "mount-probe"
    probe.mkdir()
    try:
        return subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=16k tmpfs {probe}"],
                              capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _clean(out: str) -> None:
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-4000:]


def test_reports_planted_as_links_are_replaced_and_their_targets_untouched(tmp_path):
    reports = tmp_path / "reports"
    (reports / "partial").mkdir(parents=True)
    victims = {}
    for name in REPORTS:
        victim = tmp_path / f"victim-{name.replace('/', '-')}"
        victim.write_text(f"precious {name}\n")
        (reports / name).symlink_to(victim)
        victims[name] = victim
    run = _run(tmp_path, reports)
    assert run.returncode == 0, run.stdout[-3000:]
    for name, victim in victims.items():
        assert victim.read_text() == f"precious {name}\n", name
        assert not (reports / name).is_symlink() and (reports / name).is_file(), name
    assert json.loads((reports / "results.json").read_text())["exitstatus"] == 0
    assert "selftest.reports.first" in (reports / "junit.xml").read_text()
    assert not list(reports.glob(".*.tmp")), list(reports.iterdir())


@pytest.mark.parametrize("planted", ["file", "history-file", "history-link"])
def test_a_reports_folder_that_is_not_a_folder_is_one_clear_error_before_any_check(tmp_path, planted):
    reports = tmp_path / "reports"
    if planted == "file":
        reports.write_text("not a folder\n")
    else:
        reports.mkdir()
        if planted == "history-file":
            (reports / "history").write_text("not a folder\n")
        else:
            (reports / "history").symlink_to("/etc")
    run = _run(tmp_path, reports)
    _clean(run.stdout + run.stderr)
    assert run.returncode == 4, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"the reports folder {reports} cannot be written" in run.stderr, run.stderr
    assert not (tmp_path / "ran").exists()  # no check ran


def test_a_read_only_reports_folder_is_one_clear_error_before_any_check(tmp_path):
    if not _can_mount(tmp_path):
        pytest.skip("no private mount namespace here (unshare -m needs root or CAP_SYS_ADMIN)")
    reports = tmp_path / "reports"
    reports.mkdir()
    run = _in_private_mount(tmp_path, reports, f"mount -t tmpfs -o size=1m,ro tmpfs {reports}")
    _clean(run.stdout + run.stderr)
    assert run.returncode == 4, run.stdout[-3000:] + run.stderr[-3000:]
    assert "cannot be written" in run.stderr and "Read-only file system" in run.stderr, run.stderr
    assert not (tmp_path / "ran").exists()


def test_a_disk_that_fills_leaves_no_half_written_report_and_no_stale_green(tmp_path):
    if not _can_mount(tmp_path):
        pytest.skip("no private mount namespace here (unshare -m needs root or CAP_SYS_ADMIN)")
    seed = tmp_path / "seed"
    first = _run(tmp_path, seed)  # a previous GREEN run's reports
    assert first.returncode == 0 and "GREEN" in (seed / "partial" / "status.md").read_text(), first.stdout[-3000:]
    (tmp_path / "ran").unlink()
    reports = tmp_path / "reports"
    reports.mkdir()
    listing = tmp_path / "after.txt"
    script = "\n".join([  # a 1 MB disk holding the GREEN reports, then filled to the last block
        f"mount -t tmpfs -o size=1m tmpfs {reports}",
        f"cp -a {seed}/. {reports}/",
        f"dd if=/dev/zero of={reports}/filler bs=4k 2>/dev/null || true",
        f"{shlex.join(_command(tmp_path, reports))}; rc=$?",
        f"(cd {reports} && find . -type f -printf '%P %s\\n') > {listing}",
        "exit $rc",
    ])
    run = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=tmp_path, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=180)
    out = run.stdout + run.stderr
    _clean(out)
    assert (tmp_path / "ran").exists(), out[-3000:]  # the checks ran: the disk filled when the reports came
    assert run.returncode == 4, out[-3000:]
    assert "llmval: no reports written" in out and "No space left on device" in out, out[-3000:]
    files = dict(line.rsplit(" ", 1) for line in listing.read_text().splitlines())
    assert not [name for name in files if name.endswith(".tmp")], files  # no temporary file left
    for name in REPORTS:  # no stale GREEN, nothing half-written
        assert name not in files, files
    history = [name for name in files if name.startswith("partial/history/")]
    seeded = [f"partial/history/{p.name}" for p in (seed / "partial" / "history").iterdir()]
    assert sorted(history) == sorted(seeded), (history, seeded)  # the old history stays, no new partial one
