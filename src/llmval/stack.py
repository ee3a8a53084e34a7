"""Bring a stack up from the inventory's [launch] section, wait until it is ready, and take it down.

Local background steps are started in their own process group with their output in a log file, so
teardown can end the whole group and a hang or a crash can be told from a slow start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from .errors import HostError, NotReady
from .inventory import Inventory, StepSpec
from .transport import Connection

TERM_GRACE_S = 15.0


@dataclass
class BackgroundProcess:
    """A long-running local process the suite started and owns."""

    name: str
    process: subprocess.Popen
    log_path: Path

    def is_running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_s: float = TERM_GRACE_S) -> None:
        """SIGTERM the process group, then SIGKILL what is left after `grace_s`. Idempotent."""
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                continue
            if not _group_alive(self.process.pid):
                break


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Stack:
    """The launched stack: our background processes and the log of every step."""

    inventory: Inventory
    connection_to: Callable[[str], Connection]
    log_dir: Path
    say: Callable[[str], None] = print
    processes: list[BackgroundProcess] = field(default_factory=list)

    def _run_step(self, step: StepSpec, phase: str) -> None:
        label = step.name or step.run[:60]
        if step.background:
            host = self.inventory.host(step.host)
            if host.transport.kind != "local":
                raise HostError(step.host, step.run, "background steps run on local hosts only; "
                                "remote long-running services are started with systemctl or docker")
            log_path = self.log_dir / f"{phase}-{_slug(label)}.log"
            log = open(log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
            process = subprocess.Popen(step.run, shell=True, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True,
                                       env={**os.environ, **step.env})
            log.close()
            self.processes.append(BackgroundProcess(label, process, log_path))
            self.say(f"[launch] started {label} (pid {process.pid}), log {log_path}")
            return
        env_prefix = " ".join(f"{k}={_quote(v)}" for k, v in step.env.items())
        command = f"{env_prefix} {step.run}".strip()
        result = self.connection_to(step.host).run(command, timeout_s=step.timeout_s)
        with open(self.log_dir / f"{phase}.log", "a", encoding="utf-8") as log:
            log.write(f"$ [{step.host}] {command}\nrc={result.rc}\n{result.stdout}{result.stderr}\n")
        if result.rc not in step.ok_rc:
            raise HostError(step.host, command, f"{phase} step '{label}' exited {result.rc}: "
                            f"{result.stderr.strip()[-400:]}")

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        assert self.inventory.launch is not None
        for step in self.inventory.launch.start:
            self._run_step(step, "start")

    def wait_ready(self, probe: Callable[[], bool]) -> float:
        """Poll `probe` until true; fail early on a crashed or silent process. Returns seconds taken."""
        assert self.inventory.launch is not None
        ready = self.inventory.launch.ready
        started = time.monotonic()
        last_change, last_size = started, -1
        while True:
            elapsed = time.monotonic() - started
            if probe():
                self.say(f"[launch] ready after {elapsed:.1f} s")
                return elapsed
            for proc in self.processes:
                if not proc.is_running():
                    raise NotReady(f"{proc.name} exited with code {proc.process.returncode} after "
                                   f"{elapsed:.0f} s while starting; last log lines:\n{proc.log_tail()}")
            size = sum(p.log_path.stat().st_size for p in self.processes if p.log_path.exists())
            if size != last_size:
                last_change, last_size = time.monotonic(), size
            elif time.monotonic() - last_change > ready.no_progress_s:
                raise NotReady(f"no new log output for {ready.no_progress_s:g} s after {elapsed:.0f} s: "
                               f"hung? last log lines:\n" + "\n".join(p.log_tail() for p in self.processes))
            if elapsed > ready.timeout_s:
                raise NotReady(f"not ready within {ready.timeout_s:g} s; last log lines:\n"
                               + "\n".join(p.log_tail() for p in self.processes))
            last_line = next((p.log_tail(1) for p in self.processes if p.log_tail(1)), "")
            self.say(f"[launch] waiting {elapsed:5.0f} s: {last_line[-120:]}")
            time.sleep(ready.interval_s)

    def stop(self) -> None:
        """Run the stop steps, then end every process we started. Safe to call twice."""
        assert self.inventory.launch is not None
        errors = []
        for step in self.inventory.launch.stop:
            try:
                self._run_step(step, "stop")
            except HostError as error:
                errors.append(str(error))
        for proc in reversed(self.processes):
            proc.stop()
            self.say(f"[launch] stopped {proc.name}")
        self.processes.clear()
        if errors:
            raise HostError("teardown", "", "; ".join(errors))


def http_ok(url: str, timeout_s: float = 5.0) -> bool:
    """True when GET `url` answers 200."""
    try:
        return httpx.get(url, timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:40].strip("-") or "step"


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)
