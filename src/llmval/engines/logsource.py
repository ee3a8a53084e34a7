"""Where an endpoint's engine log is, and the one bounded command that reads the lines that matter.

The inventory's `logs` field says where: `file:<path>`, `journal:<unit>`, `docker:<container>`, or
`launch` (the log the suite's own `--launch` background step writes under `<reports>/launch/`, which is
also where the integrator's shared local engine logs). Only lines matching `EVIDENCE_LINES` are read, so
a long-running engine's request log never makes the read slow, and a recording stays small.

    >>> log_command("file:/var/log/vllm.log")
    "if [ -r /var/log/vllm.log ]; then grep -a -E ... /var/log/vllm.log | tail -n 3000; else ..."
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ..errors import InventoryError

# Every line shape engines/logs.py parses; keep in sync with its regexes.
EVIDENCE_LINES = (
    "non-default args|Initializing a V1 LLM engine|fp8|FP8|KV cache|KV Cache|kv_cache|attention backend|"
    " backend\\.|RayWorkerWrapper|Custom allreduce|tool choice|server_args=|max_total_num_tokens=|Decode batch"
)
MAX_LINES = 3000
LOG_KINDS = ("file", "journal", "docker", "launch")


def _slug(text: str) -> str:
    """The file-name form of a launch step name (as llmval.launch names its logs)."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:40].strip("-") or "step"


def launch_log_path(step_name: str, reports_dir: Path) -> str:
    """The log of a `--launch` background step, relative to the working directory when it is below it."""
    path = (reports_dir / "launch" / f"start-{_slug(step_name)}.log").resolve()
    try:
        return os.path.relpath(path) if Path.cwd() in path.parents else str(path)
    except ValueError:
        return str(path)


def log_command(source: str, *, launch_path: str | list[str] | None = None) -> str:
    """The shell command (for the endpoint's host) that prints the evidence lines of the log at `source`.
    `launch_path` may list candidates (this run's reports, then the default reports/): the first readable wins."""
    kind, _, where = source.partition(":")
    grep = f"grep -a -E {shlex.quote(EVIDENCE_LINES)}"
    if kind == "launch":
        if not launch_path:
            raise InventoryError("<inventory>", [("endpoints.logs", "`launch` needs a [launch] background step")])
        candidates = [launch_path] if isinstance(launch_path, str) else list(dict.fromkeys(launch_path))
        quoted = " ".join(shlex.quote(c) for c in candidates)
        return (f"for f in {quoted}; do if [ -r \"$f\" ]; then {grep} \"$f\" | tail -n {MAX_LINES}; exit 0; fi; "
                f"done; echo 'llmval: cannot read the launch log: '{shlex.quote(' or '.join(candidates))} >&2; exit 3")
    if not where:
        raise InventoryError("<inventory>", [("endpoints.logs", f"{source!r}: say where, e.g. file:/path")])
    q = shlex.quote(where)
    if kind == "file":
        return (f"if [ -r {q} ]; then {grep} {q} | tail -n {MAX_LINES}; "
                f"else echo 'llmval: cannot read log file '{q} >&2; exit 3; fi")
    if kind == "journal":
        return f"journalctl -u {q} -b --no-pager -o cat 2>&1 | {grep} | tail -n {MAX_LINES}"
    if kind == "docker":
        return f"docker logs {q} 2>&1 | {grep} | tail -n {MAX_LINES}"
    raise InventoryError("<inventory>", [("endpoints.logs", f"unknown log source {source!r}; valid: {LOG_KINDS}")])
