"""Launch and teardown of the stack under test (`--launch`), from the inventory's `[launch]` section.

The commands live in the inventory; this package runs them in order through each host's bounded
`Connection`, waits for the endpoint with a deadline and visible progress, and tells a slow start
from a crash (exit, failed unit, exited container), a crash loop (systemd NRestarts or docker
RestartCount climbing) and a hang (no new log output for `no_progress_s`). Teardown runs every stop
step even after a failure, ends our process groups, proves with /proc that no process of ours is left
and that the port is free, and keeps the logs and a `summary.json` under the log folder. A launch owns its
endpoint from the preflight to the end of teardown (`_owner.py`): a lock per endpoint, and the listener that
answers ready must be one of its own processes. When the suite
itself dies without tearing down (SIGKILL), the launch watchdog (`_watchdog.py`) ends our process groups and
runs the inventory's stop steps (`_after_kill.py`).
"""

from ._errors import Crashed, CrashLoop, Hung, PortHeld, PortInUse, TeardownError
from ._owner import LOCK_DIR_ENV, EndpointLock, lock_path
from ._parse import error_line, parse_gpu_memory_used_mib, parse_ray_alive_nodes
from ._proc import LAUNCH_ID_ENV, ProcessInfo, group_members, listeners, live_process, tagged_processes
from ._process import BackgroundProcess
from ._ready import ReadyTarget, TargetReadiness, endpoint_probe, host_probe, log_watch, wait_all_ready
from ._signals import install_terminate_as_interrupt, signals_deferred
from ._stack import LaunchSummary, Stack, StepRecord, http_ok, port_open
from ._watch import DockerWatch, FileWatch, Observation, ProcessWatch, SystemdWatch, Watch

__all__ = [
    "LAUNCH_ID_ENV",
    "LOCK_DIR_ENV",
    "BackgroundProcess",
    "CrashLoop",
    "Crashed",
    "DockerWatch",
    "EndpointLock",
    "FileWatch",
    "Hung",
    "LaunchSummary",
    "Observation",
    "PortHeld",
    "PortInUse",
    "ProcessInfo",
    "ProcessWatch",
    "ReadyTarget",
    "Stack",
    "StepRecord",
    "SystemdWatch",
    "TargetReadiness",
    "TeardownError",
    "Watch",
    "endpoint_probe",
    "error_line",
    "group_members",
    "host_probe",
    "http_ok",
    "install_terminate_as_interrupt",
    "listeners",
    "live_process",
    "lock_path",
    "log_watch",
    "parse_gpu_memory_used_mib",
    "parse_ray_alive_nodes",
    "port_open",
    "signals_deferred",
    "tagged_processes",
    "wait_all_ready",
]
