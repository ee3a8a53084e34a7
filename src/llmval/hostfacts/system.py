"""The host answers at all (`uname -a`, sent by the reachability check itself)."""

from __future__ import annotations

from ._command import Command
from ._fact import allow

UNAME = Command("uname", "uname -a")
allow(UNAME)
