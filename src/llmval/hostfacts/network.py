"""Network interfaces (`ip -j addr`)."""

from __future__ import annotations

from ..parsers.ip import Link, parse_ip_addr
from ._command import Command
from ._fact import Reader, fact

IP_ADDR = Command("ip-addr", "ip -j addr")


@fact(IP_ADDR, section="interfaces", checks="hosts.interface.*")
def links(host: Reader) -> dict[str, Link]:
    """Interfaces by name, with state and addresses."""
    return parse_ip_addr(host.output(IP_ADDR))
