"""Every file the suite reads is a regular file, size-capped (issue 32.2, `llmval.core.files`).

Before: `--inventory /dev/zero` and `/dev/urandom` read until MemoryError (a traceback), `--inventory` naming a
FIFO hung check-inventory and pytest before any check, and a FIFO or a link to /dev/zero planted in
reports/history/ hung the next run or ended it in `INTERNALERROR> MemoryError` at 1.9 GB. Each is now one clear
line (exit 4) naming the file and what it is, or, in history/, a file that is no run's results and is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from selftest.hostile.harness import run_contract
from selftest.hostile.server import HostileServer
from selftest.strategies import ROOT

pytestmark = pytest.mark.subprocess  # each case runs llmval or the contract in a child


def _special(tmp_path, kind: str):
    path = tmp_path / f"{kind}.toml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero-link":
        path.symlink_to("/dev/zero")
    else:
        return f"/dev/{kind}"
    return str(path)


@pytest.mark.parametrize("kind", ["zero", "urandom", "fifo", "zero-link"])
@pytest.mark.parametrize("how", ["check-inventory", "pytest"])
def test_an_inventory_that_is_no_regular_file_is_one_clear_error(tmp_path, kind, how):
    inventory = _special(tmp_path, kind)
    command = [sys.executable, "-m", "llmval", "check-inventory", inventory] if how == "check-inventory" else \
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), str(ROOT / "tests" / "serving"), "-m", "smoke",
         "--inventory", inventory, "--reports", str(tmp_path / "reports")]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    said = done.stdout + done.stderr
    assert done.returncode == 4, said[-3000:]
    assert "Traceback" not in said and "MemoryError" not in said, said[-3000:]
    assert "not a regular file" in said and ("FIFO" in said or "character device" in said), said[-3000:]


@pytest.mark.parametrize("planted", ["fifo", "zero-link"])
def test_a_fifo_or_a_link_to_dev_zero_in_history_is_skipped_not_read(tmp_path, planted):
    history = tmp_path / "reports" / "partial" / "history"
    history.mkdir(parents=True)
    trap = history / "results-20991231T235959Z-hostile.json"  # the newest name: read first for the previous run
    if planted == "fifo":
        os.mkfifo(trap)
    else:
        trap.symlink_to("/dev/zero")
    with HostileServer() as server:
        run = run_contract(server, tmp_path, timeout_s=90)
    assert run.rc == 0, run.terminal[-3000:]
    assert "INTERNALERROR" not in run.terminal and "MemoryError" not in run.terminal, run.terminal[-3000:]
    assert json.loads(run.files["reports/results.json"])["deployment"] == "hostile"
