"""Part of a contract run for the launch signal self-tests: a test that is still running when the run is
killed. It says it started (the file in $LLMVAL_SELFTEST_MARKER), then waits to be interrupted."""

import os
import time
from pathlib import Path


def test_still_running_when_the_run_is_killed():
    Path(os.environ["LLMVAL_SELFTEST_MARKER"]).write_text("running\n")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        time.sleep(0.2)
    raise AssertionError("the run was not interrupted within 180 s")
