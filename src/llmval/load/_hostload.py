"""The client host's own load during a perf window, and whether the measurement it made is valid.

A perf gate measures the deployment through this host's client (and, for the embedded default, on this
host's CPUs). When other processes keep this host's CPUs busy, or the hypervisor steals them, the numbers
measure that contention and not the deployment: on the 2-core box the engine's two OMP threads run in
lockstep, so one busy process elsewhere can halve its decode speed. Every perf window is therefore
bracketed by two readings of this host's /proc (`HostSample`), and their difference (`HostWindow`) goes
into the perf report: the load average, the CPUs this process may use, CPU steal from /proc/stat, the CPU
of this suite's own process tree, of the engine's process tree where the engine runs on this host (found as
the process listening on the endpoint's port), and of everything else.

The window is *busy* (`HostWindow.busy_reason`) when other processes kept more than `OTHER_SHARE_MAX` of the
CPUs busy, or steal took more than `STEAL_SHARE_MAX` of them; the perf session then measures once more and,
still busy, raises `ClientHostBusy`: a could-not-check ("measurement invalid: client host busy, load N"),
never a broken contract.

    probe = HostLoadProbe.for_endpoint("http://127.0.0.1:8321")
    probe.start(); ...; window = probe.stop()
    window.busy_reason   # None, or "other processes kept 1.4 of 2 CPUs busy ..."
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..core.errors import LlmvalError
from ..inventory.values import url_port

OTHER_SHARE_MAX = 0.25
"""Other processes may keep at most this share of the CPUs busy during a window (on 2 CPUs: half a core)."""
STEAL_SHARE_MAX = 0.10
"""The hypervisor may steal at most this share of the CPUs' time during a window."""
MIN_JUDGED_S = 1.0
"""A shorter window holds too few clock ticks (100 a second) to tell who used the CPUs: recorded, not judged."""
BUSY_HINT = ("run perf when this host is otherwise idle: stop the other jobs on it (or wait for them), or run the "
             "suite from a host of its own; `uptime` and `top` show what else runs")
PROC = Path("/proc")
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


@dataclass(frozen=True)
class CpuTimes:
    """The aggregate `cpu` line of /proc/stat, in clock ticks (guest time is already inside user)."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def busy(self) -> int:
        """Ticks some task ran (steal, idle and iowait excluded)."""
        return self.user + self.nice + self.system + self.irq + self.softirq

    @property
    def total(self) -> int:
        return self.busy + self.idle + self.iowait + self.steal


def parse_proc_stat_cpu(text: str) -> CpuTimes:
    """The `cpu` line of /proc/stat (`cpu  1023117 51 159392 2554639 3402 0 1869 873 0 0`); older kernels
    without steal read as steal 0."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:9]] + [0] * max(0, 9 - len(fields))
            return CpuTimes(*values[:8])
    raise ValueError("no aggregate `cpu` line in /proc/stat")


def parse_proc_pid_stat(text: str) -> tuple[int, int]:
    """(ppid, utime + stime + cutime + cstime) from /proc/PID/stat; the command name may hold spaces and ')'."""
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), sum(int(v) for v in fields[11:15])


def parse_pressure_some_avg10(text: str) -> float | None:
    """`some avg10` of /proc/pressure/cpu (the share of the last 10 s in which a runnable task waited), in %."""
    for line in text.splitlines():
        if line.startswith("some "):
            for part in line.split()[1:]:
                key, _, value = part.partition("=")
                if key == "avg10":
                    return float(value)
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def process_table(proc: Path = PROC) -> dict[int, tuple[int, int]]:
    """pid -> (ppid, CPU ticks of it and its reaped children) for every process /proc shows."""
    table = {}
    for entry in proc.glob("[0-9]*"):
        text = _read(entry / "stat")
        if text is not None:
            try:
                table[int(entry.name)] = parse_proc_pid_stat(text)
            except (ValueError, IndexError):
                continue
    return table


def descendants(roots: Iterable[int], table: dict[int, tuple[int, int]]) -> set[int]:
    """`roots` (those alive) and every process below them."""
    tree = {pid for pid in roots if pid in table}
    grew = True
    while grew:
        children = {pid for pid, (ppid, _) in table.items() if ppid in tree} - tree
        tree |= children
        grew = bool(children)
    return tree


def listening_pids(port: int, proc: Path = PROC) -> list[int]:
    """Processes of this host listening on TCP `port` (any address), from /proc/net/tcp{,6} and the socket
    inodes under /proc/PID/fd; empty when none is found or /proc hides them."""
    inodes = set()
    for name in ("tcp", "tcp6"):
        for line in (_read(proc / "net" / name) or "").splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    pids = []
    if not inodes:
        return pids
    for entry in proc.glob("[0-9]*"):
        try:
            if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                pids.append(int(entry.name))
        except OSError:
            continue
    return sorted(pids)


def is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cpus_of(pids: Iterable[int], proc: Path = PROC) -> set[int]:
    """The CPUs any thread of `pids` may run on (their affinity masks, thread by thread)."""
    cpus: set[int] = set()
    for pid in pids:
        for task in (proc / str(pid) / "task").glob("[0-9]*"):
            try:
                cpus |= os.sched_getaffinity(int(task.name))
            except OSError:
                continue
    return cpus


@dataclass(frozen=True)
class HostSample:
    """One reading of this host: when, its CPU counters, load average, CPU pressure and two process trees."""

    monotonic_s: float
    cpu: CpuTimes
    load_avg: tuple[float, float, float]
    pressure_some_avg10: float | None
    suite_ticks: int
    engine_ticks: int | None
    """CPU ticks of the engine's process tree (None: the engine does not run on this host, or was not found)."""


@dataclass(frozen=True)
class HostWindow:
    """This host between two samples: the CPU each party used, in cores (CPU seconds per second)."""

    cpus: int
    wall_s: float
    load_avg: tuple[float, float, float]
    pressure_some_avg10: float | None
    steal_share: float
    suite_cores: float
    engine_cores: float | None
    other_cores: float
    engine_pids: tuple[int, ...]
    engine_note: str
    """Where the engine runs, as found (its pids on this host, or why its CPU is not told apart)."""

    @property
    def other_share(self) -> float:
        return self.other_cores / self.cpus if self.cpus else 0.0

    @property
    def busy_reason(self) -> str | None:
        """Why this window did not measure the deployment alone (None: the host was quiet enough, or the window
        was shorter than `MIN_JUDGED_S`)."""
        if self.wall_s < MIN_JUDGED_S:
            return None
        reasons = []
        if self.other_share > OTHER_SHARE_MAX:
            reasons.append(f"other processes kept {self.other_cores:.2f} of {self.cpus} CPUs busy "
                           f"(at most {OTHER_SHARE_MAX:.0%} of them allowed)")
        if self.steal_share > STEAL_SHARE_MAX:
            reasons.append(f"the hypervisor stole {self.steal_share:.0%} of the CPU time "
                           f"(at most {STEAL_SHARE_MAX:.0%} allowed)")
        return "; ".join(reasons) or None

    @property
    def is_busy(self) -> bool:
        return self.busy_reason is not None

    def describe(self) -> str:
        """One line for the terminal and the verdicts' evidence."""
        engine = f", the engine {self.engine_cores:.2f}" if self.engine_cores is not None else ""
        psi = f", CPU pressure {self.pressure_some_avg10:.0f} %" if self.pressure_some_avg10 is not None else ""
        return (f"client host: load {self.load_avg[0]:.2f} on {self.cpus} CPUs, other processes "
                f"{self.other_cores:.2f} cores, steal {self.steal_share:.1%}, this suite {self.suite_cores:.2f}"
                f"{engine}{psi} over {self.wall_s:.1f} s")

    def as_json(self) -> dict:
        return {"cpus": self.cpus, "wall_s": round(self.wall_s, 3), "load_avg": [round(x, 2) for x in self.load_avg],
                "cpu_pressure_some_avg10": self.pressure_some_avg10, "steal_share": round(self.steal_share, 4),
                "suite_cores": round(self.suite_cores, 3),
                "engine_cores": None if self.engine_cores is None else round(self.engine_cores, 3),
                "other_cores": round(self.other_cores, 3), "engine_pids": list(self.engine_pids),
                "engine": self.engine_note, "busy": self.busy_reason,
                "limits": {"other_share_max": OTHER_SHARE_MAX, "steal_share_max": STEAL_SHARE_MAX,
                           "min_judged_s": MIN_JUDGED_S}}


def window_between(before: HostSample, after: HostSample, *, cpus: int, hz: int, engine_pids: tuple[int, ...] = (),
                   engine_note: str = "") -> HostWindow:
    """The window from `before` to `after`: each party's CPU in cores; `other` is the machine's busy time less
    this suite's and the engine's (never below 0: a process that exited unreaped takes its ticks with it)."""
    wall = max(after.monotonic_s - before.monotonic_s, 1e-9)
    total = max(after.cpu.total - before.cpu.total, 1)
    busy = (after.cpu.busy - before.cpu.busy) / hz / wall
    suite = max(0, after.suite_ticks - before.suite_ticks) / hz / wall
    engine = None
    if before.engine_ticks is not None and after.engine_ticks is not None:
        engine = max(0, after.engine_ticks - before.engine_ticks) / hz / wall
    return HostWindow(cpus=cpus, wall_s=wall, load_avg=after.load_avg, pressure_some_avg10=after.pressure_some_avg10,
                      steal_share=(after.cpu.steal - before.cpu.steal) / total, suite_cores=suite,
                      engine_cores=engine, other_cores=max(0.0, busy - suite - (engine or 0.0)),
                      engine_pids=engine_pids, engine_note=engine_note)


class HostLoadProbe:
    """Samples this host around one window; `for_endpoint` finds the engine's process tree when it runs here.

    `suite_root` is this suite's process (its workers and other children count as the suite, the engine's
    tree excepted even when the suite launched it). `proc` and `clock` are for self-tests.
    """

    def __init__(self, *, engine_roots: tuple[int, ...] = (), engine_note: str = "", suite_root: int | None = None,
                 proc: Path = PROC, clock: Callable[[], float] = time.monotonic, cpus: int | None = None):
        self.engine_roots = engine_roots
        self.engine_note = engine_note
        self.suite_root = os.getpid() if suite_root is None else suite_root
        self.proc = proc
        self.clock = clock
        self.cpus = cpus or os.cpu_count() or 1  # /proc/stat's cpu line sums every online CPU
        self.hz = os.sysconf("SC_CLK_TCK")
        self._before: HostSample | None = None
        self._engine_pids: tuple[int, ...] = ()

    @classmethod
    def for_endpoint(cls, base_url: str, **kwargs) -> HostLoadProbe:
        """A probe for an endpoint: its engine's CPU is told apart where a process of this host listens on its
        port (and the URL is a loopback address, or such a listener exists); else everything but the suite is
        `other`."""
        port = url_port(base_url)
        pids = tuple(listening_pids(port, kwargs.get("proc", PROC)))
        if pids:
            return cls(engine_roots=pids, engine_note=f"on this host: pid {', '.join(map(str, pids))} listens on "
                                                      f"port {port}", **kwargs)
        where = ("on this host, but no process was found listening on port "
                 f"{port}: its CPU counts as other processes'") if is_loopback_url(base_url) else "on another host"
        return cls(engine_note=where, **kwargs)

    def engine_cpus(self) -> set[int]:
        """The CPUs the engine may use (every thread of its tree); empty when it does not run on this host."""
        if not self.engine_roots:
            return set()
        return cpus_of(descendants(self.engine_roots, process_table(self.proc)), self.proc)

    def sample(self) -> HostSample:
        table = process_table(self.proc)
        engine = descendants(self.engine_roots, table) if self.engine_roots else set()
        suite = descendants([self.suite_root], table) - engine
        self._engine_pids = tuple(sorted(engine))
        stat = _read(self.proc / "stat") or ""
        loadavg = (_read(self.proc / "loadavg") or "0 0 0").split()[:3]
        pressure = _read(self.proc / "pressure" / "cpu")
        return HostSample(
            monotonic_s=self.clock(), cpu=parse_proc_stat_cpu(stat),
            load_avg=(float(loadavg[0]), float(loadavg[1]), float(loadavg[2])),
            pressure_some_avg10=parse_pressure_some_avg10(pressure) if pressure else None,
            suite_ticks=sum(table[pid][1] for pid in suite),
            engine_ticks=sum(table[pid][1] for pid in engine) if engine else None)

    def start(self) -> None:
        self._before = self.sample()

    def stop(self) -> HostWindow:
        if self._before is None:
            raise RuntimeError("HostLoadProbe.stop() before start()")
        after = self.sample()
        return window_between(self._before, after, cpus=self.cpus, hz=self.hz, engine_pids=self._engine_pids,
                              engine_note=self.engine_note)


class ClientHostBusy(LlmvalError):
    """The client host was busy during every attempt of a perf measurement: the numbers measured contention,
    so the gate could not be checked (could-not-check, never a broken contract)."""

    reason = "measurement invalid: client host busy"
    hint = BUSY_HINT

    def __init__(self, what: str, window: HostWindow, attempts: int = 1, why: str | None = None):
        self.window = window
        self.what = what
        tries = f" in each of {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"measurement invalid: client host busy, load {window.load_avg[0]:.2f} on {window.cpus} "
                         f"CPUs, during {what}{tries}: {why or window.busy_reason} ({window.describe()}); "
                         f"fix: {BUSY_HINT}")
