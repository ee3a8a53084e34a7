"""Re-key the engine-log commands of recorded replays to the current `log_command` form.

A replay answers a command by its exact text, so when `llmval.engines.logsource` changes how it reads a log
(issue 13: the current engine start only, periodic lines kept apart; issue 43.5: the error read keeps each engine's
death lines; issue 44.7: its window keeps vLLM-under-Ray's placement-group lines too), the recorded log
reads must be found under the new command text.
This rewrites only the `command` field of those records; `stdout`, `rc` and everything
else stay as recorded (the recorded output holds the startup lines the new command also selects, in order).
`python -m selftest.engines.rekey_log_commands` (idempotent).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from llmval.engines.logsource import ERROR_LINES
from llmval.hostfacts import log_command
from llmval.hostfacts.engine_log import ERRORS_SELECT

ROOT = Path(__file__).resolve().parents[2]
REPLAYS = ROOT / "selftest" / "data" / "replays"
# The forms log_command produced before issue 13 (grep of the evidence lines | tail -n 3000).
OLD_FILE_RE = re.compile(r"^if \[ -r (?P<path>.+?) \]; then grep -a -E ")
OLD_LAUNCH_RE = re.compile(r"^for f in (?P<paths>.+?); do if \[ -r \"\$f\" \]; then grep -a -E ")
OLD_JOURNAL_RE = re.compile(r"^journalctl -u (?P<unit>\S+) -b --no-pager -o cat 2>&1 \| grep -a -E ")
OLD_DOCKER_RE = re.compile(r"^docker logs (?P<name>\S+) 2>&1 \| grep -a -E ")


# The error read's selection before issue 43.5/44.3 (`sigquit` matched SGLang's startup line; no engine's death lines).
OLD_ERROR_LINES = ("ERROR|CRITICAL|Traceback|Error:|Exception|exception|died|Killed|killed|sigquit|SIGKILL|SIGSEGV|"
                   "Segmentation fault|core dumped|out of memory")


# The error read's filter before issue 44.7 (the placement-group lines were a separate read then).
OLD_ERRORS_SELECT = "grep -a -E {} | tail -n 40"


def new_command(old: str) -> str | None:
    """The current command for an old-form log read; None when `old` is not one."""
    if shlex.quote(OLD_ERROR_LINES) in old or OLD_ERRORS_SELECT.format(shlex.quote(ERROR_LINES)) in old:
        # the error read: only its selection changed (its lines, then its window)
        old = old.replace(shlex.quote(OLD_ERROR_LINES), shlex.quote(ERROR_LINES))
        return old.replace(OLD_ERRORS_SELECT.format(shlex.quote(ERROR_LINES)), ERRORS_SELECT)
    if m := OLD_FILE_RE.match(old):
        return log_command("file:" + shlex.split(m["path"])[0])
    if m := OLD_LAUNCH_RE.match(old):
        return log_command("launch", launch_path=shlex.split(m["paths"]))
    if m := OLD_JOURNAL_RE.match(old):
        return log_command("journal:" + shlex.split(m["unit"])[0])
    if m := OLD_DOCKER_RE.match(old):
        return log_command("docker:" + shlex.split(m["name"])[0])
    return None


def rekey(path: Path) -> int:
    """Rewrite one commands*.jsonl in place; the number of records re-keyed."""
    lines, changed = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if (command := new_command(record["command"])) is not None:
            record["command"] = command
            changed += 1
        lines.append(json.dumps(record))
    if changed:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


if __name__ == "__main__":
    for jsonl in sorted(REPLAYS.rglob("commands*.jsonl")):
        if count := rekey(jsonl):
            print(f"{jsonl.relative_to(ROOT)}: {count} log read(s) re-keyed")
