"""`Stack`: run the inventory's start steps, wait until the endpoint is ready, run the stop steps.

    stack = Stack(inventory, connection_to, Path("reports/launch/run1"), allow_destructive=False)
    try:
        stack.launch()          # preflight (port free), start steps, readiness with crash/hang detection
        ...                     # the contract runs
    finally:
        stack.stop()            # stop steps, our process groups, leftovers, port freed; idempotent

Every command goes through the host's `Connection` (bounded, recorded) exactly as the inventory
wrote it, and is appended to `<log_dir>/<phase>.log`; `summary.json` holds the timings and outcome.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..core.contract import redact
from ..core.errors import EndpointError, HostError, InventoryError, LlmvalError, NotReady, ParseError
from ..inventory import Inventory, StepSpec
from ..io.http import httpx_errors, make_client, port_open
from ..io.transport import Connection
from ._errors import Crashed, CrashLoop, Hung, PortHeld, PortInUse, TeardownError
from ._owner import LOCAL_HOSTS, EndpointLock, describe_listener, foreign_listeners
from ._parse import error_line, parse_gpu_memory_used_mib, parse_ray_alive_nodes
from ._proc import ProcessInfo, launch_id_of, listeners, tagged_processes
from ._process import BackgroundProcess
from ._watch import Observation, ProcessWatch, Watch, observe_safely, remote_watch
from ._watchdog import Watchdog

PORT_FREE_WAIT_S = 15.0
LEFTOVER_WAIT_S = 5.0
PROGRESS_EVERY_S = 10.0


@dataclass
class StepRecord:
    """What one step did (for summary.json and messages)."""

    phase: str
    host: str
    label: str
    command: str
    outcome: str
    """ok | failed | started | skipped (destructive, no --allow-destructive) | not-satisfied"""
    rc: int | None = None
    duration_s: float = 0.0


@dataclass
class LaunchSummary:
    """The outcome of one launch and teardown: written to `<log_dir>/summary.json`."""

    launch_id: str
    deployment: str
    endpoint: str
    url: str
    launched_at: str = ""
    suite_pid: int = 0
    """The process that launched the stack (pytest); the watchdog ends the launch if it dies untidily."""
    watchdog: dict = field(default_factory=dict)
    """pid, log and outcome of the launch watchdog (started with the first background process)."""
    launch_to_ready_s: float | None = None
    launch_error: str = ""
    teardown_s: float | None = None
    teardown_problems: list[str] = field(default_factory=list)
    leftover_processes: list[str] = field(default_factory=list)
    skipped_destructive: list[str] = field(default_factory=list)
    processes: list[dict] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)


ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_assignments(env: dict[str, str]) -> list[str]:
    """`K='v'` words for a shell line; a key that is not an identifier is refused, never pasted (the inventory
    refuses it at load too: `X;touch /tmp/p;Y` would run as a command)."""
    bad = [k for k in env if not ENV_KEY_RE.fullmatch(k)]
    if bad:
        raise ValueError(f"environment variable names must be identifiers; got {bad!r}")
    return [f"{k}={shlex.quote(v)}" for k, v in env.items()]


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """True when GET `url` answers 200."""
    try:
        with httpx_errors(), make_client("", timeout_s=timeout_s) as client:  # bounded, as every request
            return client.get(url).status_code == 200
    except EndpointError:
        return False


class Stack:
    """The inventory's stack, brought up and down by the suite (see the module docstring)."""

    def __init__(self, inventory: Inventory, connection_to: Callable[[str], Connection], log_dir: Path, *,
                 allow_destructive: bool = False, say: Callable[[str], None] = print,
                 probe: Callable[[str], bool] = http_ok, is_port_open: Callable[[str, int], bool] = port_open,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 cwd: Path | None = None, inventory_path: Path | None = None):
        if inventory.launch is None:
            raise InventoryError(inventory.deployment.name, [("launch", "no [launch] section: nothing to launch")])
        self.inventory = inventory
        self.spec = inventory.launch
        self.connection_to = connection_to
        self.log_dir = log_dir
        self.allow_destructive = allow_destructive
        self.say = say
        self.probe = probe
        self.is_port_open = is_port_open
        self.clock = clock
        self.sleep = sleep
        self.cwd = cwd
        self.inventory_path = inventory_path
        """Where the inventory was read from; given (by a real --launch run), a run killed without teardown gets
        the inventory's stop steps run by the watchdog (`after_kill_command`)."""
        self.endpoint = inventory.endpoint(self.spec.ready.endpoint)
        self.url = self.endpoint.root_url + self.spec.ready.path
        self.address = (urlsplit(self.endpoint.root_url).hostname or "", self.endpoint.port)
        self.launch_id = uuid.uuid4().hex[:12]
        self.processes: list[BackgroundProcess] = []
        self.summary = LaunchSummary(self.launch_id, inventory.deployment.name, self.endpoint.name, self.url,
                                     suite_pid=os.getpid())
        self.watchdog: Watchdog | None = None
        self.lock: EndpointLock | None = None
        """The launch's hold on its endpoint, from the preflight to the end of teardown (`_owner.py`)."""
        self._has_started = False
        self._has_stopped = False

    # -- launch ---------------------------------------------------------------------------------------

    def launch(self) -> float:
        """Preflight, start steps, readiness; returns seconds from the first start step to ready."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.summary.launched_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        try:
            self.preflight()
            started = self.clock()
            self.start()
            self.wait_ready()
        except LlmvalError as error:
            self.summary.launch_error = str(error)
            self._write_summary()
            if not self._has_started and self.lock is not None:  # refused before any step ran: nothing to hold
                self.lock.release()
            raise
        self.summary.launch_to_ready_s = round(self.clock() - started, 2)
        self._write_summary()
        return self.summary.launch_to_ready_s

    def preflight(self) -> None:
        """Check the section against the inventory, the endpoint's port is free, the preflight steps pass."""
        problems = []
        for step in [*self.spec.preflight, *self.spec.start, *self.spec.stop]:
            try:
                host = self.inventory.host(step.host)
            except KeyError as error:
                problems.append((f"launch step '{step.label}'", str(error).strip("'\"")))
                continue
            if step.background and host.transport.kind != "local":
                problems.append((f"launch step '{step.label}'", f"background steps run on local hosts only, not "
                                 f"'{host.name}' ({host.transport.kind}); start remote services with systemctl "
                                 "or docker run -d"))
        for name in self.spec.watch_hosts():
            if name not in {h.name for h in self.inventory.hosts}:
                problems.append(("launch.ready.watch", f"host '{name}' is not a host"))
        if problems:
            raise InventoryError(f"{self.inventory.deployment.name} [launch]", problems)
        host, port = self.address
        if self.lock is None or not self.lock.is_held:
            self.lock = EndpointLock.take(self.endpoint.name, host, port, {
                "launch_id": self.launch_id, "deployment": self.inventory.deployment.name,
                "endpoint": self.endpoint.name, "logs": str(self.log_dir)})
        if self.spec.ready.port_must_be_free and self.is_port_open(host, port):
            holders = listeners(port) if host in LOCAL_HOSTS else []
            who = "; ".join(str(p) for p in holders) or "a process the suite did not start"
            hint = ("Stop it, or pick a free port in the inventory, or run without --launch to judge the server "
                    "that is running.")
            stale = [(p, found) for p in holders if (found := launch_id_of(p.pid))]
            if stale:
                holder, old_id = stale[0]
                hint = (f"It is left over from an earlier --launch run (launch id {old_id}; was pytest killed with "
                        f"SIGKILL?): stop it with `kill -TERM -- -{holder.pgid}`.")
            raise PortInUse(
                f"[{self.endpoint.name}] {host}:{port} already accepts connections before launch ({who}).\n"
                f"  The suite will not attach to a server it did not start. {hint}")
        for step in self.spec.preflight:
            self._run_step(step, "preflight")

    def start(self) -> None:
        """Run the start steps in order; a failing step stops the sequence with its own output."""
        self._has_started = True
        if self.inventory_path is not None and self.spec.stop:
            self._arm_watchdog()  # before the first step: a kill at any later moment still runs the stop steps
        for step in self.spec.start:
            self._run_step(step, "start")

    def wait_ready(self, probe: Callable[[], bool] | None = None) -> float:
        """Poll the endpoint (or `probe`) until ready; fail early on a crash, a crash loop or a hang."""
        ready = self.spec.ready
        is_ready = probe or (lambda: self.probe(self.url))
        watches: list[Watch] = [ProcessWatch(p) for p in self.processes]
        watches += [w for source in ready.watch if (w := remote_watch(source, self.connection_to))]
        started = self.clock()
        last_progress_at, last_said_at = started, -PROGRESS_EVERY_S
        progress: dict[str, str] = {}
        first_restarts: dict[str, int] = {}
        last: dict[str, Observation | str] = {}
        said_line = ""
        while True:
            now = self.clock()
            elapsed = now - started
            if is_ready():
                self._check_listener_is_ours()
                self.say(f"[launch] {self.endpoint.name} ready after {elapsed:.1f} s ({self.url})")
                return elapsed
            for watch in watches:
                seen = observe_safely(watch)
                last[watch.source] = seen
                if isinstance(seen, str):
                    continue
                if seen.dead:
                    raise Crashed(self._why(f"{watch.source} {seen.dead} after {elapsed:.0f} s while starting",
                                            seen.tail))
                if seen.restarts is not None:
                    base = first_restarts.setdefault(watch.source, seen.restarts)
                    if seen.restarts - base >= ready.crash_loop_restarts:
                        raise CrashLoop(self._why(
                            f"{watch.source} is crash-looping: restarted {seen.restarts - base} times in "
                            f"{elapsed:.0f} s (counter {base} -> {seen.restarts}, state {seen.state})", seen.tail))
                if progress.get(watch.source) != seen.progress:
                    progress[watch.source] = seen.progress
                    last_progress_at = now
            tails = {s: o.tail for s, o in last.items() if isinstance(o, Observation) and o.tail}
            if watches and now - last_progress_at > ready.no_progress_s:
                raise Hung(self._why(
                    f"no new output from {', '.join(w.source for w in watches)} for {ready.no_progress_s:g} s "
                    f"(after {elapsed:.0f} s): hung? (e.g. stuck after NCCL channel setup)", *tails.values()))
            if elapsed > ready.timeout_s:
                unread = [f"{s}: {o}" for s, o in last.items() if isinstance(o, str)]
                raise NotReady(self._why(f"{self.url} not ready within {ready.timeout_s:g} s",
                                         *tails.values(), *unread))
            line = next((t.splitlines()[-1] for t in tails.values() if t.strip()), "")
            if line != said_line or now - last_said_at >= PROGRESS_EVERY_S:
                shown = line.strip()[-140:] or "(no output yet)"
                self.say(f"[launch] waiting {elapsed:4.0f} s for {self.endpoint.name}: {shown}")
                said_line, last_said_at = line, now
            self.sleep(ready.interval_s)

    def _check_listener_is_ours(self) -> None:
        """Where this launch started local processes and the endpoint is local, the process listening on its port
        must be one of them (tagged with this launch's id): PortHeld naming who listens, else."""
        host, port = self.address
        if host.lower() not in LOCAL_HOSTS or not self.processes:
            return
        ours, others = foreign_listeners(port, self.launch_id)
        if ours and not others:
            return
        who = "; ".join(describe_listener(p) for p in others) or "no process this user can see"
        started = ", ".join(f"'{p.name}' (pid {p.pid})" for p in self.processes)
        raise PortHeld(self._why(
            f"{self.url} answers, but what listens on {host}:{port} is not this launch's ({who}); this launch "
            f"started {started}, none of which listens there. The suite will not judge an engine it did not "
            "start: stop the other server, or give this launch another port"))

    def _why(self, cause: str, *tails: str) -> str:
        excerpt = "\n".join(t for t in tails if t)
        lines = [f"[{self.endpoint.name}] not ready: {cause}"]
        if found := error_line(excerpt):
            lines.append(f"  engine error: {found}")
        if excerpt:
            lines.append("  last log lines:\n" + "\n".join(f"    | {x}" for x in excerpt.splitlines()[-20:]))
        lines.append(f"  logs: {self.log_dir}")
        return redact("\n".join(lines))

    # -- steps ----------------------------------------------------------------------------------------

    def _run_step(self, step: StepSpec, phase: str) -> None:
        command = " ".join([*env_assignments(step.env), step.run])
        if step.destructive and not self.allow_destructive:
            self.summary.skipped_destructive.append(f"{phase}: [{step.host}] {step.label}")
            self._record(StepRecord(phase, step.host, step.label, command, "skipped"))
            self.say(f"[launch] SKIPPED destructive {phase} step '{step.label}' on {step.host} "
                     f"(needs --allow-destructive): {command}")
            return
        if step.background:
            self._start_background(step, phase)
            return
        started = self.clock()
        if step.wait is not None:
            self._wait_step(step, command, phase)
            return
        result = self._exec(step, command, phase, step.timeout_s)
        outcome = "ok" if result.rc in step.ok_rc else "failed"
        self._record(StepRecord(phase, step.host, step.label, command, outcome, result.rc,
                                round(self.clock() - started, 2)))
        if outcome == "failed":
            output = (result.stderr.strip() or result.stdout.strip())[-600:]
            raise HostError(step.host, command, f"{phase} step '{step.label}' exited {result.rc} "
                            f"(ok: {step.ok_rc}): {output}")

    def _exec(self, step: StepSpec, command: str, phase: str, timeout_s: float | None):
        self.say(f"[launch] {phase}: [{step.host}] {command[:160]}")
        try:
            result = self.connection_to(step.host).run_step(command, timeout_s=timeout_s)
        except HostError as error:
            self._log(phase, step.host, command, f"error: {error}")
            self._record(StepRecord(phase, step.host, step.label, command, "failed"))
            raise
        self._log(phase, step.host, command, f"rc={result.rc} ({result.duration_s:.1f} s)\n"
                                            f"{result.stdout}{result.stderr}")
        return result

    def _wait_step(self, step: StepSpec, command: str, phase: str) -> None:
        assert step.wait is not None
        started = self.clock()
        deadline = started + step.timeout_s
        while True:
            rc = None
            try:
                result = self._exec(step, command, phase, None)
                rc = result.rc
                satisfied, seen = self._condition(step, result.rc, result.stdout)
            except HostError as error:  # a slow or unreachable answer is one more failed look, not the end
                satisfied, seen = False, str(error).splitlines()[0]
            if satisfied:
                self._record(StepRecord(phase, step.host, step.label, command, "ok", rc,
                                        round(self.clock() - started, 2)))
                self.say(f"[launch] {phase}: '{step.label}' satisfied: {seen}")
                return
            if self.clock() >= deadline:
                self._record(StepRecord(phase, step.host, step.label, command, "not-satisfied", rc,
                                        round(self.clock() - started, 2)))
                raise NotReady(f"[{step.host}] {phase} step '{step.label}' not satisfied within "
                               f"{step.timeout_s:g} s\n  expected: {self._wanted(step)}\n  observed: {seen}\n"
                               f"  command: {command}")
            self.sleep(step.wait.interval_s)

    @staticmethod
    def _wanted(step: StepSpec) -> str:
        assert step.wait is not None
        if step.wait.ray_alive_nodes is not None:
            return f">= {step.wait.ray_alive_nodes} alive Ray nodes"
        if step.wait.gpu_memory_used_mib_max is not None:
            return f"every GPU at <= {step.wait.gpu_memory_used_mib_max} MiB used (idle)"
        return f"exit code in {step.ok_rc}"

    @staticmethod
    def _condition(step: StepSpec, rc: int, stdout: str) -> tuple[bool, str]:
        assert step.wait is not None
        if rc not in step.ok_rc:
            return False, f"exit code {rc}: {stdout.strip()[-200:]}"
        try:
            if (want := step.wait.ray_alive_nodes) is not None:
                alive = parse_ray_alive_nodes(stdout)
                return alive >= want, f"{alive} alive Ray nodes"
            if (limit := step.wait.gpu_memory_used_mib_max) is not None:
                used = parse_gpu_memory_used_mib(stdout)
                busy = {i: mib for i, mib in used.items() if mib is not None and mib > limit}
                unreported = sorted(i for i, mib in used.items() if mib is None)
                note = (f"; GPUs {unreported} report memory.used [N/A] (unified memory, GB10): "
                        "memory cannot show them busy" if unreported else "")
                return not busy, (f"GPU memory used (MiB) {used}; above idle: {busy}{note}" if busy
                                  else f"all {len(used)} GPUs idle: {used}{note}")
        except ParseError as error:
            return False, str(error)
        return True, f"exit code {rc}"

    def _start_background(self, step: StepSpec, phase: str) -> None:
        label = step.label
        log_path = self.log_dir / f"{phase}-{_slug(label)}.log"
        watchdog = self._arm_watchdog()
        process = BackgroundProcess.start(label, step.run, log_path, dict(step.env), self.launch_id, cwd=self.cwd)
        self.processes.append(process)
        watchdog.guard(process.pid)
        self.summary.processes.append({"name": label, "pid": process.pid, "pgid": process.pid,
                                       "log": str(log_path)})
        self._record(StepRecord(phase, step.host, label, step.run, "started"))
        self._write_summary()
        self.say(f"[launch] {phase}: started '{label}' (pid {process.pid}, own process group), log {log_path}")

    def _arm_watchdog(self) -> Watchdog:
        """The launch watchdog, started once (see `_watchdog.py`)."""
        if self.watchdog is None:
            then = self.after_kill_command() if self.inventory_path is not None and self.spec.stop else []
            self.watchdog = Watchdog.start(self.launch_id, self.log_dir / "watchdog.log", self.spec.term_grace_s,
                                           then=then, then_timeout_s=self._stop_steps_bound_s())
            self.summary.watchdog = {"pid": self.watchdog.pid, "log": str(self.watchdog.log_path),
                                     "outcome": "guarding", "stop_steps_if_killed": bool(then)}
            self._write_summary()
        return self.watchdog

    def after_kill_command(self) -> list[str]:
        """What the watchdog runs when the suite died untidily: this inventory's stop steps (`_after_kill.py`)."""
        assert self.inventory_path is not None
        return [sys.executable, "-m", "llmval.launch._after_kill", "--inventory", str(self.inventory_path.resolve()),
                "--launch-id", self.launch_id, "--log-dir", str((self.log_dir / "after-kill").resolve()),
                *(["--cwd", str(self.cwd.resolve())] if self.cwd else []),
                *(["--allow-destructive"] if self.allow_destructive else [])]

    def _stop_steps_bound_s(self) -> float:
        """The longest the stop steps may take (each step's timeout, the port wait) plus a start-up margin."""
        return sum(step.timeout_s for step in self.spec.stop) + PORT_FREE_WAIT_S + 60

    def adopt(self, launch_id: str) -> None:
        """Take over the teardown of launch `launch_id`, started by a suite that was killed: `stop()` then runs the
        stop steps (and waits for the port) as that suite's teardown would have."""
        self.launch_id = self.summary.launch_id = launch_id
        self._has_started = True

    # -- teardown -------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop steps (all of them, even after a failure), our process groups, leftovers, port. Idempotent."""
        if self._has_stopped:
            return
        self._has_stopped = True
        try:
            self._tear_down()
        finally:
            if self.lock is not None:  # after everything of ours is gone and the port is free (or said not to be)
                self.lock.release()

    def _tear_down(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        started = self.clock()
        problems: list[str] = []
        if self._has_started:
            for step in self.spec.stop:
                try:
                    self._run_step(step, "stop")
                except LlmvalError as error:
                    problems.append(str(error))
        for process in reversed(self.processes):
            survivors = process.stop(self.spec.term_grace_s)
            self.say(f"[launch] stop: ended '{process.name}' (pid {process.pid}, exit {process.process.returncode})")
            if survivors:
                problems.append(f"process group of '{process.name}' survived SIGKILL: "
                                + "; ".join(map(str, survivors)))
        leftovers = self._leftovers() if self.processes else []
        if leftovers:
            problems.append("processes of this launch still running after teardown: " + "; ".join(map(str, leftovers)))
        if self._has_started and self.spec.ready.port_must_be_free and not self._wait_port_free():
            host, port = self.address
            who = "; ".join(map(str, listeners(port))) if host in LOCAL_HOSTS else ""
            problems.append(f"{host}:{port} still accepts connections {PORT_FREE_WAIT_S:g} s after teardown"
                            + (f" ({who})" if who else ""))
        if self.watchdog is not None:
            outcome = self.watchdog.disarm()
            self.summary.watchdog["outcome"] = outcome
            if outcome != "stood down":
                self.say(f"[launch] stop: the launch watchdog {outcome}")
        self.summary.teardown_s = round(self.clock() - started, 2)
        self.summary.leftover_processes = [str(p) for p in leftovers]
        self.summary.teardown_problems = problems
        self._write_summary()
        self.say(f"[launch] teardown done in {self.summary.teardown_s:.1f} s"
                 + (f" with {len(problems)} problem(s)" if problems else ", nothing left running"))
        if self.summary.skipped_destructive:
            self.say("[launch] destructive clean-up skipped (rerun with --allow-destructive): "
                     + "; ".join(self.summary.skipped_destructive))
        if problems:
            hint = (" (destructive clean-up steps were skipped: rerun with --allow-destructive)"
                    if self.summary.skipped_destructive else "")
            raise TeardownError(self.endpoint.name, "", "teardown left problems" + hint + ":\n  - "
                                + "\n  - ".join(problems) + f"\n  logs: {self.log_dir}")

    def _leftovers(self) -> list[ProcessInfo]:
        """Processes carrying this launch's tag that outlived their group (e.g. a child that called setsid):
        SIGKILL them and return those that still survive."""
        deadline = time.monotonic() + LEFTOVER_WAIT_S
        while (found := tagged_processes(self.launch_id)) and time.monotonic() < deadline:
            for info in found:
                self.say(f"[launch] stop: killing leftover process of this launch: {info}")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(info.pid, signal.SIGKILL)
            time.sleep(0.2)
        return found

    def _wait_port_free(self) -> bool:
        deadline = self.clock() + PORT_FREE_WAIT_S
        while self.is_port_open(*self.address):
            if self.clock() >= deadline:
                return False
            self.sleep(0.5)
        return True

    # -- logs -----------------------------------------------------------------------------------------

    def _log(self, phase: str, host: str, command: str, text: str) -> None:
        stamp = dt.datetime.now(dt.UTC).strftime("%H:%M:%S")
        with open(self.log_dir / f"{phase}.log", "a", encoding="utf-8") as log:
            log.write(redact(f"{stamp} $ [{host}] {command}\n{text.rstrip()}\n\n"))

    def _record(self, record: StepRecord) -> None:
        self.summary.steps.append(record)

    def _write_summary(self) -> None:
        data = asdict(self.summary)
        (self.log_dir / "summary.json").write_text(redact(json.dumps(data, indent=2)) + "\n", encoding="utf-8")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:40].strip("-") or "step"
