"""NCCL INFO logs: which transport each channel used, which network, what the environment set.

Lines look like `host:pid:tid [dev] NCCL INFO <msg>`. Each line first passes the log envelope stage
(`llmval.parsers.envelope`: journald/docker prefixes, colour, Ray's `(RayWorkerWrapper pid=.., ip=..)` tags and its
`[repeated 15x across cluster]` suffix), so a record's message never holds them; a record may still be glued to a
program's own print or share a line with the next record (concurrent writers), so records are searched, not
anchored, and each ends where the next one (with its own process tags) begins. Formats: NVIDIA/nccl `src/debug.cc`,
`src/transport/*.cc` and the real H200 captures in selftest/data/real/h200x2 (see infra.md §4).

    >>> log = parse_nccl_log("spark1:9:9 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IBext_v11/0")
    >>> sorted(log.transports)
    ['ib']
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .envelope import PROCESS_TAGS, ProcessTag, take_tags, unwrap_line

RECORD_RE = re.compile(r"(?P<tags>" + PROCESS_TAGS + r"*)"
                       r"(?P<host>[^\s:()]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:(?P<where>\S+:\d+) )?"
                       r"NCCL (?P<level>INFO|WARN) (?P<msg>.*?)"
                       r"(?=" + PROCESS_TAGS + r"*[^\s:()]+:\d+:\d+ \[\d+\] (?:\S+:\d+ )?NCCL |$)")
"""`host:pid:tid [dev] NCCL INFO msg`; a WARN names its source first (debug.cc: `"%s:%d:%d [%d] %s:%d NCCL WARN "`,
e.g. `node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer ...`)."""
VERSION_RE = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)\S*\+cuda(?P<cuda>\d+\.\d+)")
CHANNEL_RE = re.compile(r"^Channel (?P<ch>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+)\[(?P<srcdev>[0-9a-f]+)\] -> "
                        r"(?P<dst>\d+)\[(?P<dstdev>[0-9a-f]+)\](?: \[(?P<dir>send|receive)\])? via (?P<via>\S.*)$")
NET_VIA_RE = re.compile(r"^NET/(?P<net>[^/]+)/(?P<ndev>\d+)(?:\((?P<proxy>\d+)\))?(?P<gdr>/GDRDMA)?")
IB_NET_NAME_RE = re.compile(r"^(?:IB|IBext(?:_v\d+)?|NCCL RDMA Plugin v\d+)$")
"""The version-robust IB name (infra.md §4.3): internal IB, the IBext plugin of any ABI, or its load-time name."""
IB_DEVICES_RE = re.compile(r"^NET/IB : Using ?(?P<devs>.*?)\s*(?:\[RO\])?; OOB (?P<oob>\S+)")
"""`Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ...`, `Using [RO]; OOB ...` (no HCA), and the merged
(virtual) device form `Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [RO]; OOB ...` (NCCL_IB_MERGE_NICS)."""
IB_DEVICE_RE = re.compile(r"\[(?P<i>\d+)\] ?(?P<name>[^:\s={},\[\]]+):(?P<port>\d+)(?::\S+?)?/"
                          r"(?P<link>IB|RoCE|UNSPECIFIED)")
PLUGIN_SELF_RE = re.compile(r"^P2P plugin (?:v(?P<abi>\d+) )?(?P<name>IBext(?:_v\d+)?|UCX\S*)")
USING_NETWORK_RE = re.compile(r"^Using network (?P<net>.+)$")
SET_BY_ENV_RE = re.compile(r"^(?P<name>NCCL_[A-Z0-9_]+) set by environment to (?P<value>.*?)\.?$")


@dataclass(frozen=True)
class Channel:
    """One `Channel NN[/c] : a[x] -> b[y] ... via ...` line."""

    host: str
    src: int
    dst: int
    direction: str | None
    via: str
    transport: str
    """`p2p`, `shm`, `ib`, `socket`, `collnet` or `other`."""
    net: str | None = None
    """The network name for NET channels (`IBext_v11`, `Socket`, `NCCL RDMA Plugin v9`)."""
    gdr: bool = False
    line: str = ""
    ip: str | None = None
    """The Ray node whose worker printed the line (its `ip=` tag); None without Ray or on the driver's node."""


@dataclass
class NcclLog:
    """What an NCCL INFO log proves."""

    lines: int = 0
    versions: set[str] = field(default_factory=set)
    channels: list[Channel] = field(default_factory=list)
    networks: set[str] = field(default_factory=set)
    """Names from `Using network X`. Not proof of the data path: only channel lines are."""
    ib_devices: list[tuple[str, str]] = field(default_factory=list)
    """(device, link layer) pairs from `NET/IB : Using [0]dev:1/RoCE ...`; empty when no HCA was found."""
    plugin_names: set[str] = field(default_factory=set)
    env: dict[str, str] = field(default_factory=dict)
    """`NCCL_X set by environment to V` lines (trailing period of NCCL_PARAM lines removed)."""
    warnings: list[str] = field(default_factory=list)
    """`NCCL WARN` lines, each as `file.cc:line msg` (the source NCCL names) where the line carries one."""
    senders: set[ProcessTag] = field(default_factory=set)
    """The process tags (Ray actor, pid, node ip) the records arrived under: which workers' NCCL this log holds."""

    @property
    def ibext_disabled(self) -> bool:
        """`NCCL_IBEXT_DISABLE set by environment to 1`: the IBext plugin's IB path is off (nccl#676), whatever
        plugin name the log prints while loading it."""
        return self.env.get("NCCL_IBEXT_DISABLE", "").strip() == "1"

    @property
    def transports(self) -> set[str]:
        return {c.transport for c in self.channels}

    def first_channel(self, transport: str) -> Channel | None:
        return next((c for c in self.channels if c.transport == transport), None)


def classify_via(via: str) -> tuple[str, str | None, bool]:
    """(transport, net name, GPU Direct RDMA) of a channel's `via ...` text.

    >>> classify_via("NET/NCCL RDMA Plugin v9/3/GDRDMA")
    ('ib', 'NCCL RDMA Plugin v9', True)
    """
    if via.startswith("P2P/"):
        return "p2p", None, False
    if via.startswith("SHM/"):
        return "shm", None, False
    if via.startswith("CollNet"):
        return "collnet", None, False
    net = NET_VIA_RE.match(via)
    if net is not None:
        name = net["net"]
        transport = "ib" if IB_NET_NAME_RE.match(name) else "socket" if name == "Socket" else "other"
        return transport, name, net["gdr"] is not None
    return "other", None, False


def parse_nccl_log(text: str) -> NcclLog:
    """Everything the transport checks need from an NCCL log (INFO and WARN lines; others are ignored)."""
    log = NcclLog()
    for raw in text.splitlines():
        envelope = unwrap_line(raw)
        for match in RECORD_RE.finditer(envelope.message):
            log.lines += 1
            tags = envelope.tags + take_tags(match["tags"])[0]
            log.senders.update(tags)
            ip = next((t.ip for t in reversed(tags) if t.ip), None)
            msg = match["msg"].rstrip()
            if match["level"] == "WARN":
                log.warnings.append(f"{match['where']} {msg}" if match["where"] else msg)
                continue
            if m := CHANNEL_RE.match(msg):
                transport, net, gdr = classify_via(m["via"])
                record = envelope.message[match.start("host"):match.end()].strip()
                log.channels.append(Channel(match["host"], int(m["src"]), int(m["dst"]), m["dir"], m["via"],
                                            transport, net, gdr, record, ip))
            elif m := VERSION_RE.search(msg):
                log.versions.add(m["version"])
            elif m := IB_DEVICES_RE.match(msg):
                log.ib_devices += [(d["name"], d["link"]) for d in IB_DEVICE_RE.finditer(m["devs"])]
            elif m := USING_NETWORK_RE.match(msg):
                log.networks.add(m["net"])
            elif m := PLUGIN_SELF_RE.match(msg):
                log.plugin_names.add(m["name"])
            elif m := SET_BY_ENV_RE.match(msg):
                log.env[m["name"]] = m["value"]
    if log.ibext_disabled:  # loaded, then disabled: not a network this run can use
        log.plugin_names = {n for n in log.plugin_names if not n.startswith("IBext")}
        log.networks = {n for n in log.networks if not n.startswith("IBext")}
    return log
