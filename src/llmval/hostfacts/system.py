"""The host answers at all (`uname -a`): the reachability check's fact.

Read ahead with every other planned fact of the host (`Prefetch`), so a fleet's reachability checks do not send
one command after another from the main thread; a one-host run reads it when the check asks, as before. The
command and its recorded answer are what the check sent itself before (recordings replay unchanged).
"""

from __future__ import annotations

from ..io.recording import CommandResult
from ._command import Command
from ._fact import Reader, fact

UNAME = Command("uname", "uname -a")


@fact(UNAME, section="name", needs=lambda h: True)
def uname(host: Reader) -> CommandResult:
    """The host's answer to `uname -a` through its transport (any exit code; no answer raises, memoized)."""
    return host.result(UNAME)
