"""`docker inspect --type container NAME`: state, image and environment of one container.

Beside `State.Status`/`Running`, the state says how a container stopped (moby `container.State`): `ExitCode`,
`OOMKilled` (the kernel's OOM killer ended it), `Restarting` and the top-level `RestartCount` (a restart policy
bringing it back again and again); `describe` names them, so an OOM-killed or restart-looping engine does not read
as a clean stop.

    >>> c = parse_docker_inspect('[{"Name":"/vllm","State":{"Running":true,"Status":"running"},'
    ...                          '"Config":{"Image":"org/img:1","Env":["A=1"]}}]')
    >>> c.is_running, c.image, c.env
    (True, 'org/img:1', {'A': '1'})
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import ParseError
from ..core.jsontext import read_json
from .env import parse_env_assignments

EXIT_SIGNALS = {137: "SIGKILL (128+9: killed, often by the OOM killer or `docker kill`)",
                139: "SIGSEGV (128+11: the process crashed)", 143: "SIGTERM (128+15: stopped)",
                134: "SIGABRT (128+6: the process aborted)"}
"""Exit codes above 128 are 128 + the signal that ended the container's main process."""


@dataclass(frozen=True)
class ContainerInfo:
    name: str
    status: str
    is_running: bool
    """Running and not in a restart: a container that `Restarting` is not serving."""
    image: str
    env: dict[str, str]
    exit_code: int | None = None
    oom_killed: bool = False
    restarting: bool = False
    restart_count: int = 0
    error: str = ""
    """`State.Error`: why docker could not start or run it (e.g. the GPU device request failed)."""

    def describe(self) -> str:
        """The state as a verdict shows it: `exited (exit code 137: SIGKILL ...), OOM-killed, restarted 14 times`.

        >>> ContainerInfo("vllm", "exited", False, "i", {}, exit_code=0, restart_count=3).describe()
        'exited (exit code 0: the server stopped itself without an error code), restarted 3 times'
        """
        parts = [self.status or "?"]
        if not self.is_running and self.exit_code is not None and self.status in ("exited", "dead", "restarting"):
            meaning = EXIT_SIGNALS.get(self.exit_code) or (
                "the server stopped itself without an error code" if self.exit_code == 0 else "an error exit")
            parts[0] += f" (exit code {self.exit_code}: {meaning})"
        if self.oom_killed:
            parts.append("OOM-killed (State.OOMKilled: the kernel killed it for memory)")
        if self.restarting or self.restart_count:
            parts.append(f"restarted {self.restart_count} times" + (
                " and restarting now: a restart loop (the engine crashes at every start)" if self.restarting else ""))
        if self.error:
            parts.append(f"docker: {self.error[:200]}")
        return ", ".join(parts)


def parse_docker_inspect(text: str) -> ContainerInfo:
    data = read_json(text, "docker inspect")  # ParseError naming it: not JSON, or over a bound
    if isinstance(data, list):
        if len(data) != 1:
            raise ParseError("docker inspect", f"expected one container, got {len(data)}", text[:200])
        data = data[0]
    if not isinstance(data, dict) or "State" not in data:
        raise ParseError("docker inspect", "no State object", text[:200])
    state = data.get("State") or {}
    config = data.get("Config") or {}
    exit_code, restarts = state.get("ExitCode"), data.get("RestartCount")
    return ContainerInfo(name=str(data.get("Name", "")).lstrip("/"), status=str(state.get("Status", "")),
                         is_running=bool(state.get("Running")) and not state.get("Restarting"),
                         image=str(config.get("Image", "")), env=parse_env_assignments(config.get("Env") or []),
                         exit_code=exit_code if isinstance(exit_code, int) else None,
                         oom_killed=bool(state.get("OOMKilled")), restarting=bool(state.get("Restarting")),
                         restart_count=restarts if isinstance(restarts, int) else 0,
                         error=str(state.get("Error") or ""))


def image_matches(expected: str, observed: str) -> bool:
    """`org/img` matches any tag of it; `org/img:tag` and digests must match exactly.

    >>> image_matches("org/img", "org/img:latest"), image_matches("org/img:1", "org/img:2")
    (True, False)
    """
    if expected == observed:
        return True
    last = expected.rsplit("/", 1)[-1]
    if ":" in last or "@" in expected:
        return False
    return observed.split("@", 1)[0].rsplit(":", 1)[0] == expected if ":" in observed.rsplit("/", 1)[-1] else False
