"""`ip -j addr`: interfaces, their state and addresses (iproute2 JSON).

    >>> links = parse_ip_addr('[{"ifname":"lo","operstate":"UNKNOWN","flags":["LOOPBACK","UP"],'
    ...                        '"addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]}]')
    >>> links["lo"].is_up, links["lo"].addresses
    (True, ('127.0.0.1/8',))
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..core.errors import ParseError
from ..core.jsontext import read_json


@dataclass(frozen=True)
class Link:
    name: str
    operstate: str
    flags: tuple[str, ...]
    addresses: tuple[str, ...]
    """`addr/prefixlen` for inet and inet6."""

    @property
    def is_up(self) -> bool:
        """Administratively up with carrier: operstate UP, or UNKNOWN (loopback, some virtual links) with UP."""
        return self.operstate == "UP" or (self.operstate == "UNKNOWN" and "UP" in self.flags
                                          and "NO-CARRIER" not in self.flags)

    def addresses_in(self, subnet: str) -> list[str]:
        network = ipaddress.ip_network(subnet, strict=False)
        return [a for a in self.addresses
                if ipaddress.ip_interface(a).ip.version == network.version and ipaddress.ip_interface(a).ip in network]


def parse_ip_addr(text: str) -> dict[str, Link]:
    """Interfaces by name from `ip -j addr`."""
    data = read_json(text, "ip -j addr")  # ParseError naming it: not JSON, or over a bound
    if not isinstance(data, list):
        raise ParseError("ip -j addr", "top level is not a list", text[:200])
    links = {}
    for entry in data:
        if not isinstance(entry, dict) or "ifname" not in entry:
            continue  # iproute2 emits {} entries for links it cannot describe
        addrs = tuple(f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])
                      if a.get("family") in ("inet", "inet6") and "local" in a)
        links[entry["ifname"]] = Link(entry["ifname"], entry.get("operstate", "UNKNOWN"),
                                      tuple(entry.get("flags", [])), addrs)
    return links
