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


class CrashLoop(NotReady):
    """A watched unit or container kept restarting while the stack was starting."""


class Hung(NotReady):
    """The watched logs said nothing new for the configured no-progress window."""


class PortInUse(NotReady):
    """The endpoint's port was taken before launch; the suite will not attach to a foreign server."""


class PortHeld(NotReady):
    """The endpoint is not this launch's: another run holds its lock, or another process answers on its port."""


class TeardownError(HostError):
    """Teardown ran every step but something failed or was left behind."""
