"""A pytest plugin for the `killed` serving fault: SIGKILL the engine's process group right after one test.

Loaded with `-p selftest.serving.kill_plugin`; `LLMVAL_SELFTEST_KILL_PGID=<pgid>:<test node id>`.
"""

from __future__ import annotations

import os
import signal

from selftest.serving.faults import KILL_AFTER_ENV


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    pgid, _, after = os.environ.get(KILL_AFTER_ENV, "").partition(":")
    if pgid and nodeid.endswith(after.split("tests/", 1)[-1]):
        try:
            os.killpg(int(pgid), signal.SIGKILL)
        except ProcessLookupError:
            pass
