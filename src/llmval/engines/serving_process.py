"""Evidence from the engine that is running (issue 21.3): a startup log counts only when it belongs to the
server that answers on the endpoint's port now.

Startup facts (model dtype, tool-call parser, KV dtype, speculative settings) are read from the engine log.
After `kill -9` of the API server the log is still there, and without this check its lines were listed under
Done although no engine was serving. `check_log_owner` asks the endpoint's host (declared host facts, read
only: `listening_ports`, `port_pids`, `processes`):

- nothing listens on the endpoint's port: the log's server is gone; could not check, naming the pid the log
  was written by;
- the log names its server's pid (vLLM prefixes lines with `(APIServer pid=N)`) and a file log is read: that
  pid, or one of its children, must hold the port's socket; else the log is an earlier server's;
- a journal or docker log is already cut to the unit's current invocation / the container's current start
  (`engines/logsource.py`), and pids in a container are of its own namespace: a listening port is enough.

Which pids a log names is engine knowledge (`EngineAdapter.log_server_pids`). A recording made before these
reads existed answers nothing for them: the log is taken as before (so old recordings replay with their
verdicts).
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.errors import LlmvalError, ReplayMiss


class StaleEvidence(LlmvalError):
    """The engine log belongs to a server that does not answer now: its startup facts are not evidence."""

    depends_on = ("serving.health",)


def check_log_owner(endpoint, log_text: str, facts, server_pids: list[int]) -> str:
    """Raise StaleEvidence unless the log belongs to the process serving the endpoint's port now; return what
    tied them (for evidence), or "" when the host cannot say (a recording from before these reads)."""
    port = endpoint.port
    source = endpoint.logs or ""
    written_by = f"written by the server pid {server_pids[-1]}" if server_pids else "of the last engine start"
    try:
        listening = facts.listening_ports()
        if port not in listening:
            raise StaleEvidence(f"[{endpoint.name}] the engine log ({source}) is {written_by}, but nothing listens "
                                f"on port {port} now: its startup lines are not evidence of a serving engine "
                                "(see serving.health)")
        if not server_pids or not source.startswith(("file:", "launch")):
            return f"port {port} is listening (log {source})"
        holders = facts.port_pids(port)
        if not holders:
            return f"port {port} is listening; its process is not visible to this user"
        if set(server_pids) & set(holders):
            return f"the log's server pid {server_pids[-1]} serves port {port}"
        rows = facts.processes(tuple(holders))
    except ReplayMiss:
        return ""
    if any(row.ppid in server_pids for row in rows.values()):
        return f"port {port} is served by a child of the log's server pid {server_pids[-1]}"
    now = ", ".join(f"pid {p} ({rows[p].args[:80]}, up {rows[p].age_s} s)" if p in rows else f"pid {p}"
                    for p in holders)
    raise StaleEvidence(f"[{endpoint.name}] the engine log ({source}) is {written_by}, but port {port} is served "
                        f"by {now}: the log is an earlier server's, so its startup facts are not this engine's")


def owned_log(read: Callable[[], str], endpoint, facts_of: Callable[[str], object],
              server_pids: Callable[[str], list[int]]) -> Callable[[], str]:
    """`read`, checked by `check_log_owner` against the endpoint's host; the log and its verdict are read once
    per run (a log that is not the serving engine's is not read again by every startup-fact check)."""
    outcome: list = []

    def read_owned() -> str:
        if not outcome:
            try:
                text = read()
                check_log_owner(endpoint, text, facts_of(endpoint.host), server_pids(text))
                outcome.append((True, text))
            except StaleEvidence as error:
                outcome.append((False, error))
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    return read_owned
