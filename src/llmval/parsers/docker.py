"""`docker inspect --type container NAME`: state, image and environment of one container.

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


@dataclass(frozen=True)
class ContainerInfo:
    name: str
    status: str
    is_running: bool
    image: str
    env: dict[str, str]


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
    return ContainerInfo(name=str(data.get("Name", "")).lstrip("/"), status=str(state.get("Status", "")),
                         is_running=bool(state.get("Running")), image=str(config.get("Image", "")),
                         env=parse_env_assignments(config.get("Env") or []))


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
