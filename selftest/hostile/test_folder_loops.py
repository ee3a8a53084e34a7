"""A folder option that loops is one clear error, exit 4, naming the path (issue 45.4).

Before: `--replay loop` (a link to itself, or one reached through a link to its parent) ended in `INTERNALERROR>
RuntimeError: Symlink loop`, exit 3 (`Replay.__init__` resolved it before it checked), and `--record loop` in
`INTERNALERROR> FileExistsError`. Each folder the suite is given is now followed in one guarded place
(`llmval.io.recording`'s `_resolved`, `claim_recording`; `llmval.report.files.check_reports_dir` for --reports).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from selftest.strategies import ROOT

pytestmark = pytest.mark.subprocess  # each case runs the contract in a child

PATHS = {"self": "loop", "through-self": "loop/rec", "through-parent-link": "rec/up/rec/up/loop"}


@pytest.mark.parametrize("option", ["--replay", "--record", "--reports", "--inventory"])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_folder_that_loops_is_exit_4_naming_it(tmp_path, option, path):
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "up").symlink_to("..")
    given = PATHS[path]
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir",
                           str(ROOT), "-c", str(ROOT / "pyproject.toml"), str(ROOT / "tests" / "hosts"), "-m", "smoke",
                           option, given], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    said = done.stdout + done.stderr
    assert done.returncode == 4, said[-3000:]
    assert "Traceback" not in said and "INTERNALERROR" not in said, said[-3000:]
    assert f" {given}" in said, said[-3000:]  # the path as given
