"""Why a launch or a teardown failed. All are `LlmvalError`s: the suite could not bring the stack up
(or down) to judge it, which is reported as an ERROR, never as a failed contract check.

    NotReady (llmval.core.errors)
     ├── Crashed       a process, unit or container we watch died while starting (exit code, log excerpt)
     ├── CrashLoop     a systemd unit or container restarted N times while starting (restart counter)
     ├── Hung          no new log output for `no_progress_s` (last lines, e.g. after NCCL channel setup)
     ├── PortInUse     something already answers on the endpoint's port before launch
     └── PortHeld      another --launch run holds the endpoint's lock, or the listener that answered ready is
                       not one of this launch's processes (who it is)
    HostError (llmval.core.errors)
     └── TeardownError teardown ran every step but left something behind (what, where, the fix)
"""

from __future__ import annotations

from ..core.errors import HostError, NotReady


class Crashed(NotReady):
    """A watched process, unit or container died while the stack was starting."""

    hint = ("the engine exited while starting: its own error line above says why (a flag it refuses, a model it "
            "cannot load); fix that in the inventory's [[launch.start]] and run again; its whole log is in the logs "
            "folder named")


class CrashLoop(NotReady):
    """A watched unit or container kept restarting while the stack was starting."""

    hint = ("the unit or container restarts on its own error: read its log lines above (journalctl -u / docker "
            "logs), fix the cause, then run again")


class Hung(NotReady):
    """The watched logs said nothing new for the configured no-progress window."""

    hint = ("the engine stopped making progress while starting: its last log lines above show where (NCCL setup, a "
            "download, a compile); fix that, or raise [launch.ready] no_progress_s if it legitimately goes quiet")


class PortInUse(NotReady):
    """The endpoint's port was taken before launch; the suite will not attach to a foreign server."""

    hint = ("stop the process that holds the port (its pid and the command are above), or pick a free port in the "
            "inventory, or run without --launch to judge the server already there")


class PortHeld(NotReady):
    """The endpoint is not this launch's: another run holds its lock, or another process answers on its port."""

    hint = ("another --launch run or process owns this endpoint (named above): wait for that run to end, or stop "
            "the process, then run again")


class TeardownError(HostError):
    """Teardown ran every step but something failed or was left behind."""
