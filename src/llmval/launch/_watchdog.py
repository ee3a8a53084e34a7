"""The launch watchdog: ends what a `--launch` run started when the suite dies without tearing it down.

Teardown (`Stack.stop()`) runs after a failed test, Ctrl-C, SIGTERM and SIGHUP, but nothing runs in a process
killed with SIGKILL (a CI job at its time limit, the OOM killer): the engine, in its own session, would keep
serving and holding the GPU. So before the first background process starts (before the first start step when the
run will hand the watchdog the inventory's stop steps), the suite starts this watchdog:

    suite (pytest) ──holds the only write end──▶ pipe ──read end──▶ watchdog (own session, no launch tag)

The suite writes `group <pgid>` for each process group it starts and `disarm` once its own teardown is done;
the watchdog then exits without touching anything. A read that returns end-of-file without `disarm` means the
suite's process is gone (the kernel closes its descriptors however it died): the watchdog sends SIGTERM to every
process group of this launch, SIGKILL after the inventory's `term_grace_s`, and exits once nothing is left.
Its groups are those the suite named and those of any process carrying this launch's `LLMVAL_LAUNCH_ID` (a
child that made its own session, vLLM's EngineCore after its API server died); a group is signalled only while
a process in it carries the tag, so a recycled group id is never signalled. Then, when the suite gave it one, it
runs the inventory's stop steps (`_after_kill.py`: what start steps handed to systemd or docker, on any host). What
it did is in `watchdog.log`.

While it waits it blocks in `read()`: no CPU, one small interpreter (standard library only; it runs this file as a
script, `_proc.py` beside it, without importing the package).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

if __package__:
    from ._proc import LAUNCH_ID_ENV, ProcessInfo, group_members, launch_id_of, tagged_processes
else:  # run as a script by `Watchdog.start`
    from _proc import LAUNCH_ID_ENV, ProcessInfo, group_members, launch_id_of, tagged_processes

KILL_WAIT_S = 5.0
POLL_S = 0.2
DISARM_WAIT_S = 5.0


class Watchdog:
    """The suite's side: start the watchdog, name each process group to it, disarm it after teardown."""

    def __init__(self, process: subprocess.Popen, write_fd: int, log_path: Path):
        self.process = process
        self.log_path = log_path
        self._write_fd: int | None = write_fd

    @classmethod
    def start(cls, launch_id: str, log_path: Path, grace_s: float, *, then: list[str] | None = None,
              then_timeout_s: float = 0) -> Watchdog:
        """Start the watchdog for `launch_id` in its own session, its output appended to `log_path`; `then` is a
        command it runs after ending the groups when it fires (the inventory's stop steps), for `then_timeout_s`."""
        read_fd, write_fd = os.pipe()  # both close-on-exec: no process the suite starts later inherits the write end
        env = {k: v for k, v in os.environ.items() if k != LAUNCH_ID_ENV}  # it must not count as the launch's own
        try:
            with open(log_path, "ab") as log:
                process = subprocess.Popen(
                    [sys.executable, "-B", "-E", "-s", str(Path(__file__).resolve()), "--fd", str(read_fd),
                     "--launch-id", launch_id, "--grace", f"{grace_s:g}", "--suite-pid", str(os.getpid()),
                     *(["--then-timeout", f"{then_timeout_s:g}", "--then", *then] if then else [])],
                    pass_fds=(read_fd,), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, env=env)
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        return cls(process, write_fd, log_path)

    @property
    def pid(self) -> int:
        return self.process.pid

    def guard(self, pgid: int) -> bool:
        """Name a process group of this launch; False when the watchdog is no longer listening."""
        return self._send(f"group {pgid}\n")

    def disarm(self) -> str:
        """Teardown is done: tell the watchdog to exit without acting, and reap it. Returns what happened."""
        if self._write_fd is None:
            return "already disarmed"
        listening = self._send("disarm\n")
        os.close(self._write_fd)
        self._write_fd = None
        try:
            rc = self.process.wait(timeout=DISARM_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return f"did not exit within {DISARM_WAIT_S:g} s of disarm: killed (see {self.log_path})"
        if not listening or rc != 0:
            return f"had exited early (exit {rc}; see {self.log_path}): this run was not guarded against SIGKILL"
        return "stood down"

    def _send(self, line: str) -> bool:
        if self._write_fd is None:
            return False
        try:
            os.write(self._write_fd, line.encode())
        except BrokenPipeError:
            return False
        return True


# -- the watchdog process ---------------------------------------------------------------------------------


def _say(line: str) -> None:
    print(f"{dt.datetime.now(dt.UTC):%H:%M:%S} [watchdog {os.getpid()}] {line}", flush=True)


def launch_groups(launch_id: str, named: set[int]) -> dict[int, list[ProcessInfo]]:
    """The live process groups of this launch and their members: each group the suite named or that holds a
    process tagged with `launch_id`, kept only while a member carries the tag (never a recycled group id)."""
    groups = {}
    for pgid in named | {p.pgid for p in tagged_processes(launch_id)}:
        members = group_members(pgid)
        if any(launch_id_of(p.pid) == launch_id for p in members):
            groups[pgid] = members
    return groups


def end_launch(launch_id: str, named: set[int], grace_s: float) -> dict[int, list[ProcessInfo]]:
    """SIGTERM every group of the launch, SIGKILL after `grace_s`; returns the groups still alive (none)."""
    started = time.monotonic()
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_WAIT_S)):
        groups = launch_groups(launch_id, named)
        if not groups:
            break
        for pgid, members in groups.items():
            _say(f"{sig.name} process group {pgid}: " + "; ".join(str(p) for p in members))
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError) as error:
                _say(f"  could not signal group {pgid}: {error}")
        deadline = time.monotonic() + wait_s
        while launch_groups(launch_id, named) and time.monotonic() < deadline:
            time.sleep(POLL_S)
    left = launch_groups(launch_id, named)
    took = time.monotonic() - started
    _say(f"nothing of launch {launch_id} left after {took:.1f} s" if not left else
         f"still alive after SIGKILL ({took:.1f} s): " + "; ".join(str(p) for m in left.values() for p in m))
    return left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="end a --launch run's processes when the suite dies")
    parser.add_argument("--fd", type=int, required=True, help="read end of the pipe the suite holds open")
    parser.add_argument("--launch-id", required=True)
    parser.add_argument("--grace", type=float, required=True, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("--suite-pid", type=int, required=True, help="the suite's pid (for the log only)")
    parser.add_argument("--then-timeout", type=float, default=0, help="seconds the --then command may take")
    parser.add_argument("--then", nargs=argparse.REMAINDER, default=[],
                        help="a command to run after ending the groups (the inventory's stop steps)")
    args = parser.parse_args(argv)
    _say(f"guarding launch {args.launch_id} of the suite (pid {args.suite_pid})")
    named: set[int] = set()
    pending = b""
    while chunk := os.read(args.fd, 4096):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            word, _, value = line.decode().partition(" ")
            if word == "group":
                named.add(int(value))
                _say(f"process group {value} is this launch's")
            elif word == "disarm":
                _say("disarmed: the suite tore the launch down itself")
                return 0
    _say(f"the suite (pid {args.suite_pid}) is gone and did not tear down: ending launch {args.launch_id}")
    left = end_launch(args.launch_id, named, args.grace)
    return 1 if run_then(args.then, args.then_timeout) != 0 or left else 0


def run_then(command: list[str], timeout_s: float) -> int:
    """Run the stop-steps command (its output into this log); its exit code, 0 when there is none."""
    if not command:
        return 0
    _say(f"running the inventory's stop steps: {' '.join(command)}")
    started = time.monotonic()
    try:
        rc = subprocess.run(command, stdin=subprocess.DEVNULL, timeout=timeout_s or None).returncode
    except subprocess.TimeoutExpired:
        _say(f"the stop steps did not finish within {timeout_s:g} s (killed)")
        return 1
    except OSError as error:
        _say(f"the stop steps could not start: {error}")
        return 1
    _say(f"the stop steps exited {rc} after {time.monotonic() - started:.1f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
