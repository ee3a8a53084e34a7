"""CPU burners that are not this process's children (another user's jobs, as the client-host rule sees them), and
their end: what the host-load self-test and measure_honest share."""

from __future__ import annotations

import os
import subprocess
import sys


def orphan_burners(count: int) -> list[int]:
    """`count` CPU-burning processes that are *not* this process's children (a shell starts them and exits), as
    another user's jobs would be: their CPU is other processes', not the suite's."""
    out = subprocess.run(["sh", "-c", " ".join([f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!;"]
                                               * count)], capture_output=True, text=True, timeout=10, check=True)
    return [int(pid) for pid in out.stdout.split()]


def stop(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
