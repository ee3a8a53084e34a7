"""systemd units and docker containers."""

from __future__ import annotations

from ..core.errors import CommandFailed
from ..parsers.docker import ContainerInfo, parse_docker_inspect
from ..parsers.systemd import UnitState, parse_systemctl_show
from ._command import CONTAINER, UNIT, Command
from ._fact import Reader, fact, failure_text

UNIT_SHOW = Command("unit-show",
                    "systemctl show -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Environment {unit}",
                    unit=UNIT)
CONTAINER_INSPECT = Command("container-inspect", "docker inspect --type container {name}", name=CONTAINER)


@fact(UNIT_SHOW, section="services", checks="hosts.service.*",
      needs=lambda h: [(s.name,) for s in h.services if s.kind == "systemd"])
def unit(host: Reader, name: str) -> UnitState:
    """A systemd unit's state, enablement, main pid and Environment=."""
    return parse_systemctl_show(host.output(UNIT_SHOW, unit=name))


@fact(CONTAINER_INSPECT, section="services", checks="hosts.service.*",
      needs=lambda h: [(s.name,) for s in h.services if s.kind == "docker"])
def container(host: Reader, name: str) -> ContainerInfo | None:
    """The container, or None when docker has no container of that name."""
    result = host.result(CONTAINER_INSPECT, name=name)
    if result.rc != 0:
        if "no such" in (result.stderr + result.stdout).lower():
            return None
        raise CommandFailed(host.name, result.command, failure_text(result))
    return parse_docker_inspect(result.stdout)
