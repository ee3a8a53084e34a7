"""Where an endpoint's engine log is, and the one bounded command that reads the lines that matter.

The inventory's `logs` field says where: `file:<path>`, `journal:<unit>`, `docker:<container>`, or
`launch` (the log the suite's own `--launch` background step writes under `<reports>/launch/`, which is
also where the integrator's shared local engine logs).

The command reads the CURRENT engine start only, however long it has served: the journal of the unit's current
invocation (`_SYSTEMD_INVOCATION_ID`), `docker logs --since` the container's last start, a file from its last
start marker on. Of that, it keeps the startup lines (`STARTUP_LINES`, at most `MAX_LINES`) and, separately,
only the last `MAX_PERIODIC_LINES` periodic lines (`PERIODIC_LINES`: SGLang's `Decode batch.` every ~0.44 s
while decoding, vLLM's `Engine 000: ... KV cache usage` every 10 s), so days of serving never push the startup
facts out of the window. One pass of `awk`, so the read stays bounded and a recording stays small.

    log_command("file:/var/log/vllm.log")
    # if [ -r /var/log/vllm.log ]; then n=$(grep -a -n -E '<start markers>' /var/log/vllm.log | tail -n 1 ...);
    #   tail -n +"${n:-1}" /var/log/vllm.log | awk '<periodic: last 50> <startup: last 3000>'; else ...; fi
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ..errors import InventoryError

# Every startup line shape engines/logs.py parses; keep in sync with its regexes.
STARTUP_LINES = (
    "non-default args|Initializing a V1 LLM engine|fp8|FP8|KV cache|KV Cache|kv_cache|attention backend|"
    " backend\\.|RayWorkerWrapper|Custom allreduce|tool choice|server_args=|max_total_num_tokens=|"
    "world_size=[0-9]+, local_world_size="
)
# Lines an engine prints over and over while it serves: kept apart, only the last few.
PERIODIC_LINES = "Decode batch\\.|Prefill batch\\.|Engine [0-9]+: Avg prompt throughput|SpecDecoding metrics"
# Where one engine start begins in a file that holds several (a log appended across restarts).
START_MARKERS = "non-default args: \\{|server_args=ServerArgs\\("
EVIDENCE_LINES = f"{STARTUP_LINES}|{PERIODIC_LINES}"  # every line shape the reader keeps
MAX_LINES = 3000
MAX_PERIODIC_LINES = 50
LOG_KINDS = ("file", "journal", "docker", "launch")
DOCKER_STARTED_AT = "{{.State.StartedAt}}"


def select_command() -> str:
    """The awk filter: startup lines (last MAX_LINES) then periodic ones (last MAX_PERIODIC_LINES), in order."""
    program = (
        f"/{PERIODIC_LINES}/ {{ p[np++ % {MAX_PERIODIC_LINES}] = $0; next }} "
        f"/{STARTUP_LINES}/ {{ s[ns++ % {MAX_LINES}] = $0 }} "
        f"END {{ for (i = (ns > {MAX_LINES} ? ns - {MAX_LINES} : 0); i < ns; i++) print s[i % {MAX_LINES}]; "
        f"for (i = (np > {MAX_PERIODIC_LINES} ? np - {MAX_PERIODIC_LINES} : 0); i < np; i++) "
        f"print p[i % {MAX_PERIODIC_LINES}] }}"
    )
    return f"awk {shlex.quote(program)}"


def _from_last_start(path: str) -> str:
    """Shell: the evidence lines of file `path` (already quoted or "$f") from its last start marker on."""
    return (f"n=$(grep -a -n -E {shlex.quote(START_MARKERS)} {path} | tail -n 1 | cut -d: -f1); "
            f"tail -n +\"${{n:-1}}\" {path} | {select_command()}")


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
    """The shell command (for the endpoint's host) that prints the evidence lines of the current engine start
    of the log at `source`, rendered through its declared read-only command (`llmval.hostfacts.engine_log`):
    a value that is not a valid argument (e.g. starts with `-`) raises `UnsafeArgument` before anything is sent."""
    from ..hostfacts.engine_log import render_log_command  # the allow-list declares these commands

    return render_log_command(source, launch_path=launch_path)


def log_command_text(source: str, *, launch_path: str | list[str] | None = None) -> str:
    """The command text for `source` (unchecked; `log_command` is what is sent). `launch_path` may list
    candidates (this run's reports, then the default reports/): the first readable wins."""
    kind, _, where = source.partition(":")
    if kind == "launch":
        if not launch_path:
            raise InventoryError("<inventory>", [("endpoints.logs", "`launch` needs a [launch] background step")])
        candidates = [launch_path] if isinstance(launch_path, str) else list(dict.fromkeys(launch_path))
        quoted = " ".join(shlex.quote(c) for c in candidates)
        return (f"for f in {quoted}; do if [ -r \"$f\" ]; then {_from_last_start(chr(34) + '$f' + chr(34))}; "
                f"exit 0; fi; done; echo 'llmval: cannot read the launch log: '"
                f"{shlex.quote(' or '.join(candidates))} >&2; exit 3")
    if not where:
        raise InventoryError("<inventory>", [("endpoints.logs", f"{source!r}: say where, e.g. file:/path")])
    q = shlex.quote(where)
    if kind == "file":
        return (f"if [ -r {q} ]; then {_from_last_start(q)}; "
                f"else echo 'llmval: cannot read log file '{q} >&2; exit 3; fi")
    if kind == "journal":
        # the unit's current invocation only; systemd without InvocationID (< 232): this boot
        return (f"inv=$(systemctl show -p InvocationID --value {q} 2>/dev/null); "
                f"if [ -n \"$inv\" ]; then journalctl _SYSTEMD_INVOCATION_ID=\"$inv\" --no-pager -o cat; "
                f"else journalctl -u {q} -b --no-pager -o cat; fi 2>&1 | {select_command()}")
    if kind == "docker":
        # since the container's current start (a restarted container keeps its earlier runs' output)
        return (f"since=$(docker inspect -f {shlex.quote(DOCKER_STARTED_AT)} {q} 2>/dev/null); "
                f"docker logs ${{since:+--since \"$since\"}} {q} 2>&1 | {select_command()}")
    raise InventoryError("<inventory>", [("endpoints.logs", f"unknown log source {source!r}; valid: {LOG_KINDS}")])
