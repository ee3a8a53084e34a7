"""`systemctl show -p A,B,... UNIT`: `Key=Value` lines; `Environment=` is a space-separated list.

    >>> unit = parse_systemctl_show("ActiveState=active\\nUnitFileState=enabled\\nEnvironment=A=1 \\"B=x y\\"\\n")
    >>> unit.is_active, unit.is_enabled, unit.environment
    (True, True, {'A': '1', 'B': 'x y'})
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..core.errors import ParseError
from .env import parse_env_assignments


@dataclass(frozen=True)
class UnitState:
    properties: dict[str, str]

    @property
    def is_active(self) -> bool:
        return self.properties.get("ActiveState") == "active"

    @property
    def is_enabled(self) -> bool:
        return self.properties.get("UnitFileState") in {"enabled", "enabled-runtime", "static", "alias"}

    @property
    def exists(self) -> bool:
        return self.properties.get("LoadState") not in {None, "not-found"}

    @property
    def environment(self) -> dict[str, str]:
        raw = self.properties.get("Environment", "")
        try:
            words = shlex.split(raw)
        except ValueError as error:
            raise ParseError("systemctl show Environment=", str(error), raw) from None
        return parse_env_assignments(words)


def parse_systemctl_show(text: str) -> UnitState:
    props = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ParseError("systemctl show", "line is not Key=Value", line)
        props[key] = value
    return UnitState(props)
