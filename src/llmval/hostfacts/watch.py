"""The readiness watch's reads (`--wait-ready`, `--launch`; `llmval.launch._watch`), on the read-only allow-list.

They are not host facts (nothing judges them, and they are not recorded: waiting is not evidence), but they go
to a host like one, so each is a declared command with typed arguments like every other read.
"""

from __future__ import annotations

from ._command import CONTAINER, PATH, UNIT, Command
from ._fact import allow

TAIL_LINES = 20
"""How many last lines each watch read shows (the templates below say 20)."""

WATCH_UNIT = Command("watch-unit", "systemctl show -p NRestarts -p ActiveState -p SubState -p ExecMainStatus {unit}",
                     unit=UNIT)
"""A unit's restart counter and state."""
WATCH_JOURNAL = Command("watch-journal", "journalctl -u {unit} -n 20 --no-pager -o cat --show-cursor", unit=UNIT)
"""The unit's last journal lines and the cursor after them (the cursor moves = progress)."""
WATCH_CONTAINER = Command("watch-container", "docker inspect -f '{{{{.RestartCount}}}} {{{{.State.Status}}}} "
                          "{{{{.State.ExitCode}}}}' {name}", name=CONTAINER)
"""A container's restart counter, status and exit code."""
WATCH_CONTAINER_LOGS = Command("watch-container-logs", "docker logs -t --tail 20 {name}", name=CONTAINER)
"""The container's last log lines, timestamped (the last line changes = progress)."""
WATCH_FILE = Command("watch-file", "stat -c %s {path} && tail -n 20 {path}", path=PATH)
"""A log file's size (grows = progress) and its last lines."""

allow(WATCH_UNIT, WATCH_JOURNAL, WATCH_CONTAINER, WATCH_CONTAINER_LOGS, WATCH_FILE)
