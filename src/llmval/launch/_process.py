"""Local long-running processes the suite starts and owns: own process group, log file, launch tag.

Every process we start carries `LLMVAL_LAUNCH_ID=<id>` in its environment, which its children
inherit. `tagged_processes(id)` (`_proc.py`) finds them all by reading /proc, even one that left our
process group, so teardown can prove that nothing of ours is left running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.contract import redact
from ._proc import LAUNCH_ID_ENV, ProcessInfo, group_members

TERM_GRACE_S = 15.0
KILL_WAIT_S = 5.0


def _copy_redacted(pipe, log_path: Path) -> None:
    """Copy a process's output to its log as it comes, secrets removed, until the process closes it. Output is
    written up to its last line end (`\\n`, or `\\r` of a progress bar), so a secret is never cut in two; a
    line longer than 64 KiB is written as it is."""
    pending = b""
    with pipe, open(log_path, "ab") as log:
        while chunk := pipe.read1(65536):
            pending += chunk
            cut = max(pending.rfind(b"\n"), pending.rfind(b"\r")) + 1
            if cut == 0 and len(pending) < 65536:
                continue
            cut = cut or len(pending)
            log.write(redact(pending[:cut].decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
            log.flush()
            pending = pending[cut:]
        log.write(redact(pending.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))


@dataclass
class BackgroundProcess:
    """A long-running local process the suite started and owns (leader of its own process group)."""

    name: str
    process: subprocess.Popen
    log_path: Path

    @classmethod
    def start(cls, name: str, command: str, log_path: Path, env: dict[str, str], launch_id: str,
              cwd: Path | None = None) -> BackgroundProcess:
        """Start `command` through the shell in a new session, stdout+stderr appended to `log_path`, each line
        redacted on the way (an engine prints its own `--api-key` and `'api_key': [...]` at start-up)."""
        process = subprocess.Popen(command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd,
                                   env={**os.environ, **env, LAUNCH_ID_ENV: launch_id})
        threading.Thread(target=_copy_redacted, args=(process.stdout, log_path), daemon=True,
                         name=f"llmval-log-{name}").start()
        return cls(name, process, log_path)

    @property
    def pid(self) -> int:
        return self.process.pid

    def is_running(self) -> bool:
        return self.process.poll() is None

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(0, self.log_size() - 64_000))
                text = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_s: float = TERM_GRACE_S) -> list[ProcessInfo]:
        """SIGTERM the group, SIGKILL what is left after `grace_s`; returns survivors (none). Idempotent."""
        pgid = self.process.pid
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_WAIT_S)):
            if not group_members(pgid) and self.process.poll() is not None:
                break
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                self.process.poll()  # reap the leader so it does not linger as a zombie
                if self.process.returncode is not None and not group_members(pgid):
                    break
                time.sleep(0.1)
        self.process.poll()
        return group_members(pgid)
