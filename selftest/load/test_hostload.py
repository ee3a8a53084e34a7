"""The client host's load over a perf window (`llmval.load._hostload`): /proc parsed, each party's CPU told apart
(this suite, the engine's tree even when the suite launched it, everything else), the busy rule, and a really
busy host (CPU burners that are not the suite's children) judged busy."""

from __future__ import annotations

import os
import time

import pytest

from llmval.load._hostload import (
    MIN_JUDGED_S,
    OTHER_SHARE_MAX,
    HostLoadProbe,
    HostSample,
    listening_pids,
    parse_pressure_some_avg10,
    parse_proc_pid_stat,
    parse_proc_stat_cpu,
    window_between,
)
from selftest.load.burners import orphan_burners, stop

# REAL lines, read on this 2-core CI box on 2026-12-01 (`head -1 /proc/stat`, `cat /proc/pressure/cpu`).
REAL_STAT = "cpu  1023117 51 159392 2554639 3402 0 1869 873 0 0\n"
REAL_PRESSURE = ("some avg10=33.89 avg60=35.23 avg300=24.85 total=2449711713\n"
                 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


def test_proc_stat_cpu_line_is_read_with_steal_apart():
    cpu = parse_proc_stat_cpu(REAL_STAT + "cpu0 1 2 3 4 5 6 7 8 0 0\n")  # per-CPU lines follow (SYNTHESIZED)
    assert (cpu.user, cpu.idle, cpu.steal) == (1023117, 2554639, 873)
    assert cpu.busy == 1023117 + 51 + 159392 + 0 + 1869
    assert cpu.total == cpu.busy + 2554639 + 3402 + 873


def test_cpu_pressure_some_avg10_is_read():
    assert parse_pressure_some_avg10(REAL_PRESSURE) == pytest.approx(33.89)
    assert parse_pressure_some_avg10("full avg10=1.00\n") is None


def test_pid_stat_with_spaces_and_parentheses_in_the_name():
    # SYNTHESIZED in the kernel's /proc/PID/stat layout: pid (comm) state ppid ... utime stime cutime cstime
    fields = ["S", "41"] + ["0"] * 9 + ["300", "20", "7", "3"] + ["0"] * 30
    ppid, ticks = parse_proc_pid_stat(f"4242 (VLLM::Engine (x) Core) {' '.join(fields)}")
    assert (ppid, ticks) == (41, 330)


class FakeProc:
    """A SYNTHESIZED /proc in a folder: the cpu line, loadavg, pressure and processes (ppid, ticks)."""

    def __init__(self, root):
        self.root = root
        (root / "pressure").mkdir(parents=True)
        (root / "net").mkdir()
        self.now = 0.0

    def write(self, *, busy: int, idle: int, steal: int = 0, load: float = 0.5,
              procs: dict[int, tuple[int, int]]) -> None:
        (self.root / "stat").write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 {steal} 0 0\n")
        (self.root / "loadavg").write_text(f"{load} {load} {load} 1/100 999\n")
        (self.root / "pressure" / "cpu").write_text("some avg10=1.50 avg60=1.00 avg300=1.00 total=1\n")
        for pid, (ppid, ticks) in procs.items():
            (self.root / str(pid)).mkdir(exist_ok=True)
            rest = ["S", str(ppid)] + ["0"] * 9 + [str(ticks), "0", "0", "0"] + ["0"] * 30
            (self.root / str(pid) / "stat").write_text(f"{pid} (p{pid}) {' '.join(rest)}\n")

    def clock(self) -> float:
        return self.now


def test_window_tells_suite_engine_and_others_apart_even_when_the_suite_launched_the_engine(tmp_path):
    proc = FakeProc(tmp_path)
    probe = HostLoadProbe(engine_roots=(20,), engine_note="pid 20", suite_root=10, proc=tmp_path,
                          clock=proc.clock, cpus=2)
    probe.hz = 100
    # suite 10 -> worker 11, and 10 -> engine 20 -> engine core 21 (launched by the suite); 30 is someone else
    proc.write(busy=1000, idle=1000, procs={10: (1, 0), 11: (10, 0), 20: (10, 0), 21: (20, 0), 30: (1, 0)})
    probe.start()
    proc.now = 10.0  # 10 s: 2000 ticks of capacity on 2 CPUs at 100 Hz
    proc.write(busy=1000 + 1900, idle=1000 + 100, load=3.2,
               procs={10: (1, 150), 11: (10, 50), 20: (10, 1000), 21: (20, 500), 30: (1, 200)})
    window = probe.stop()
    assert window.suite_cores == pytest.approx(0.2)  # 10 and its worker, not the engine it launched
    assert window.engine_cores == pytest.approx(1.5)  # 20 and its child
    assert window.other_cores == pytest.approx(0.2)  # 1.9 busy - 0.2 - 1.5
    assert window.engine_pids == (20, 21) and window.load_avg[0] == 3.2
    assert window.pressure_some_avg10 == 1.5 and window.busy_reason is None  # 10 % of the CPUs: quiet enough
    assert window.as_json()["other_cores"] == pytest.approx(0.2)


def _window(other_cores: float, *, steal: int = 0, wall_s: float = 10.0):
    """A window on 2 CPUs at 100 Hz where others used `other_cores` and steal took `steal` ticks."""
    before = HostSample(0.0, parse_proc_stat_cpu("cpu 0 0 0 0 0 0 0 0"), (1.0, 1.0, 1.0), None, 0, None)
    busy = int(other_cores * 100 * wall_s)
    after = HostSample(wall_s, parse_proc_stat_cpu(f"cpu {busy} 0 0 {2000 - busy - steal} 0 0 0 {steal}"),
                       (4.5, 2.0, 1.0), None, 0, None)
    return window_between(before, after, cpus=2, hz=100)


def test_busy_when_others_keep_more_than_a_quarter_of_the_cpus_or_steal_takes_a_tenth():
    assert _window(0.4).busy_reason is None
    assert "other processes kept 0.60 of 2 CPUs busy" in _window(0.6).busy_reason
    assert "the hypervisor stole 15% of the CPU time" in _window(0.0, steal=300).busy_reason
    assert _window(2.0, wall_s=MIN_JUDGED_S / 2).busy_reason is None  # too few ticks to judge: recorded only


def test_listener_of_the_endpoint_port_is_found_through_its_socket_inode(tmp_path):
    FakeProc(tmp_path)
    # SYNTHESIZED in /proc/net/tcp's layout: 0100007F:2081 is 127.0.0.1:8321 listening (state 0A), inode 777
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    row = ("   0: 0100007F:2081 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 "
           "0000000000000000 100 0 0 10 0\n")
    (tmp_path / "net" / "tcp").write_text(header + row)
    (tmp_path / "net" / "tcp6").write_text(header)
    for pid, inode in ((50, 777), (60, 888)):
        (tmp_path / str(pid) / "fd").mkdir(parents=True)
        os.symlink(f"socket:[{inode}]", tmp_path / str(pid) / "fd" / "3")
    assert listening_pids(8321, tmp_path) == [50]
    assert listening_pids(8000, tmp_path) == []
    probe = HostLoadProbe.for_endpoint("http://127.0.0.1:8321", proc=tmp_path)
    assert probe.engine_roots == (50,) and "pid 50 listens on port 8321" in probe.engine_note
    assert "no process was found listening on port 8000" in HostLoadProbe.for_endpoint(
        "http://localhost:8000", proc=tmp_path).engine_note
    assert HostLoadProbe.for_endpoint("http://10.1.2.3:8000", proc=tmp_path).engine_note == "on another host"


@pytest.mark.slow
def test_a_host_kept_busy_by_cpu_burners_is_judged_busy():
    """REAL: two burners (one per CPU of this box) that the suite did not start; the probe sees them as others."""
    burners = orphan_burners(os.cpu_count() or 2)
    try:
        time.sleep(0.3)
        probe = HostLoadProbe(suite_root=os.getpid())
        probe.start()
        time.sleep(2.0)
        window = probe.stop()
    finally:
        stop(burners)
    assert window.other_cores > OTHER_SHARE_MAX * window.cpus, window.describe()
    assert window.suite_cores < 0.2, window.describe()  # sleeping: the burners are not counted as the suite
    assert window.is_busy and "other processes kept" in window.busy_reason
