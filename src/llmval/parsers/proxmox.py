"""Proxmox guest configs and PCI driver bindings: how a GPU split shows up on the node.

Formats: `proxmox/pve-docs` `pct.adoc` / `qm.adoc` (infra.md §5.3): `OPTION: value` lines, raw
`lxc.*` keys, snapshot sections after the first `[section]` header (ignored), `devN:` and
`hostpciN:` property strings; `lspci -nnk` blocks; and our sysfs listing (`<bdf> <class> <driver link>`).

    >>> conf = parse_lxc_conf("dev0: /dev/nvidia0,gid=44\\nlxc.cgroup2.devices.allow: c 195:* rwm\\n")
    >>> sorted(conf.gpu_devices), conf.cgroup_majors
    (['/dev/nvidia0'], {195})
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.errors import ParseError
from .nvidia_smi import normalize_bus_id

SECTION_RE = re.compile(r"^\[[^\]]+\]\s*$")
OPTION_RE = re.compile(r"^(?P<key>[A-Za-z0-9_.\-]+)\s*[:=]\s*(?P<value>.*)$")
CGROUP_ALLOW_RE = re.compile(r"^c (?P<major>\d+|\*):(?P<minor>\d+|\*) [rwm]+$")
GPU_NODE_RE = re.compile(r"^/dev/nvidia(?P<minor>\d+)$")
HOSTPCI_KEY_RE = re.compile(r"^hostpci(?P<n>\d+)$")
DEV_KEY_RE = re.compile(r"^dev(?P<n>\d+)$")
LSPCI_HEAD_RE = re.compile(r"^(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (?P<desc>.*)$")
LSPCI_DRIVER_RE = re.compile(r"^\s+Kernel driver in use: (?P<driver>\S+)")
NVIDIA_NODE_NAMES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


@dataclass(frozen=True)
class LxcConf:
    """The GPU-relevant part of `/etc/pve/lxc/<id>.conf` (main section only)."""

    options: dict[str, list[str]]
    gpu_devices: frozenset[str]
    """`/dev/nvidiaN` nodes passed in, by `devN:` or `lxc.mount.entry`."""
    other_nvidia_nodes: frozenset[str]
    """nvidiactl, nvidia-uvm and friends."""
    cgroup_majors: set[int | str]
    """Majors allowed by `lxc.cgroup2.devices.allow: c M:* rwm` (`*` for any)."""
    cgroup_allows: frozenset[tuple[str, str]] = frozenset()
    """(major, minor) pairs allowed for character devices, as written (`*` for any)."""
    bind_mounted: frozenset[str] = frozenset()
    """NVIDIA nodes passed by `lxc.mount.entry` (these need a cgroup allow; `devN:` entries get one from Proxmox)."""

    def is_allowed(self, major: int, minor: int) -> bool:
        """True when the cgroup lets the container open character device major:minor."""
        return any(a in (str(major), "*") and b in (str(minor), "*") for a, b in self.cgroup_allows)

    @property
    def gpu_minors(self) -> set[int]:
        return {int(m["minor"]) for d in self.gpu_devices if (m := GPU_NODE_RE.match(d))}


@dataclass(frozen=True)
class HostPci:
    key: str
    bus_ids: tuple[str, ...]
    """Normalized; empty when the entry uses `mapping=` (resolved through the cluster mapping)."""
    mapping: str | None
    raw: str
    mdev: str | None = None
    """The mediated-device type (`mdev=nvidia-63`): a vGPU slice of the GPU, not the whole GPU passed through."""

    @property
    def is_vgpu(self) -> bool:
        return self.mdev is not None


@dataclass(frozen=True)
class PciDriver:
    bus_id: str
    pci_class: str
    driver: str | None
    """`nvidia`, `vfio-pci`, … or None when no driver is bound."""


@dataclass
class VmConf:
    hostpci: list[HostPci] = field(default_factory=list)

    @property
    def bus_ids(self) -> set[str]:
        """GPUs passed through whole (vGPU `mdev=` entries are not: see `vgpus`)."""
        return {b for h in self.hostpci if not h.is_vgpu for b in h.bus_ids}

    @property
    def vgpus(self) -> dict[str, str]:
        """bus id → mdev type of every vGPU entry (`hostpciN: 01:00.0,mdev=nvidia-63`)."""
        return {b: h.mdev for h in self.hostpci if h.mdev is not None for b in h.bus_ids}


def _options(text: str, source: str) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if SECTION_RE.match(stripped):
            break  # snapshot or pending sections follow; only the current config counts
        match = OPTION_RE.match(stripped)
        if match is None:
            raise ParseError(source, "line is not `key: value`", line)
        options.setdefault(match["key"], []).append(match["value"].strip())
    return options


def _property_string(value: str, default_key: str) -> dict[str, str]:
    props: dict[str, str] = {}
    for index, part in enumerate(value.split(",")):
        key, sep, val = part.partition("=")
        if sep:
            props[key.strip()] = val.strip()
        elif index == 0:
            props[default_key] = key.strip()
    return props


def parse_lxc_conf(text: str) -> LxcConf:
    """GPU device entries of an LXC config: `devN: [path=]/dev/nvidiaN,...`, `lxc.mount.entry` and cgroup allows."""
    source = "LXC config"
    options = _options(text, source)
    nodes: set[str] = set()
    for key, values in options.items():
        if DEV_KEY_RE.match(key):
            nodes.update(_property_string(v, "path").get("path", "") for v in values)
    mounted: set[str] = set()
    for entry in options.get("lxc.mount.entry", []):
        if (node := _mounted_nvidia_node(entry)) is not None:
            nodes.add(node)
            mounted.add(node)
    majors: set[int | str] = set()
    allows: set[tuple[str, str]] = set()
    for allow in options.get("lxc.cgroup2.devices.allow", []) + options.get("lxc.cgroup.devices.allow", []):
        allow = allow.strip()
        if allow in ("a", "a *:* rwm"):
            allows.add(("*", "*"))
            majors.add("*")
        elif m := CGROUP_ALLOW_RE.match(allow):
            majors.add(m["major"] if m["major"] == "*" else int(m["major"]))
            allows.add((m["major"], m["minor"]))
    return LxcConf(options=options, gpu_devices=frozenset(n for n in nodes if GPU_NODE_RE.match(n)),
                   other_nvidia_nodes=frozenset(n for n in nodes if n in NVIDIA_NODE_NAMES), cgroup_majors=majors,
                   cgroup_allows=frozenset(allows), bind_mounted=frozenset(mounted))


def _mounted_nvidia_node(entry: str) -> str | None:
    """The NVIDIA device node an `lxc.mount.entry` passes in, named as inside the container, or None.

    The source may be any path (`/dev/nvidia0`, or a node made elsewhere: `/lxc/<id>/devices/nvidia0`);
    the target (relative to the rootfs, `dev/nvidia0`) says which device the container sees.

    >>> _mounted_nvidia_node("/lxc/102010/devices/nvidia1 dev/nvidia1 none bind,optional,create=file")
    '/dev/nvidia1'
    """
    fields = entry.split()
    if len(fields) < 2:
        return None
    target = "/" + fields[1].lstrip("/")
    if target.startswith("/dev/nvidia"):
        return target
    if fields[0].startswith("/dev/nvidia"):
        return fields[0]
    return None


def parse_vm_conf(text: str) -> VmConf:
    """`hostpciN: [host=]<id[;id2]>[,pcie=1,...]` or `mapping=<name>` entries of a QEMU VM config; an entry
    with `mdev=<type>` is a vGPU (a mediated device), not full passthrough."""
    source = "VM config"
    conf = VmConf()
    for key, values in _options(text, source).items():
        if not HOSTPCI_KEY_RE.match(key):
            continue
        for value in values:
            props = _property_string(value, "host")
            ids = []
            for one in filter(None, props.get("host", "").split(";")):
                one = one.strip()
                ids.append(normalize_bus_id(one if "." in one else f"{one}.0"))
            conf.hostpci.append(HostPci(key, tuple(ids), props.get("mapping"), value, props.get("mdev")))
    return conf


def parse_pci_drivers(text: str) -> dict[str, PciDriver]:
    """Our sysfs listing: one `<bdf> <class> <readlink of driver>` line per NVIDIA PCI function."""
    drivers = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if len(fields) not in (2, 3):
            raise ParseError("sysfs PCI driver listing", "expected `<bdf> <class> [driver link]`", line)
        bus_id = normalize_bus_id(fields[0])
        driver = fields[2].rstrip("/").rsplit("/", 1)[-1] if len(fields) == 3 else None
        drivers[bus_id] = PciDriver(bus_id, fields[1], driver)
    return drivers


def parse_lspci_k(text: str) -> dict[str, str | None]:
    """`lspci -k` / `lspci -nnk`: bus id → `Kernel driver in use` (None where no driver is bound)."""
    drivers: dict[str, str | None] = {}
    current: str | None = None
    for line in text.splitlines():
        if head := LSPCI_HEAD_RE.match(line):
            current = normalize_bus_id(head["bdf"])
            drivers[current] = None
        elif current is not None and (used := LSPCI_DRIVER_RE.match(line)):
            drivers[current] = used["driver"]
    return drivers


PROC_DEVICES_HEAD_RE = re.compile(r"^(?P<kind>Character|Block) devices:\s*$")
PROC_DEVICES_ROW_RE = re.compile(r"^\s*(?P<major>\d+) (?P<name>\S+)\s*$")
LS_DEVICE_RE = re.compile(r"^c[-rwxsStT.+]{9}\S*\s+\d+\s+\S+\s+\S+\s+(?P<major>\d+),\s*(?P<minor>\d+)\s+.*?"
                          r"\s(?P<path>/dev/\S+)$")
"""`crw-rw-rw- 1 root root 509,   0 Dec  6 10:00 /dev/nvidia-uvm` (coreutils `ls -l` of a character device)."""
FIXED_NVIDIA_MAJOR = 195
"""nvidia.ko's major (`/dev/nvidiaN`, `/dev/nvidiactl`, `/dev/nvidia-modeset`), fixed by the driver; nvidia-uvm's and
nvidia-caps' majors are given out by the kernel at load time (`register_chrdev(0, ...)`), so they differ per node."""


@dataclass(frozen=True)
class DeviceNodes:
    """The node's NVIDIA character devices: `/proc/devices` (driver name -> major) and `ls -l /dev/nvidia*`
    (path -> (major, minor))."""

    majors: dict[str, int]
    nodes: dict[str, tuple[int, int]]

    def number_of(self, path: str) -> tuple[int, int | None] | None:
        """(major, minor) of a device path as the node has it; for a path the listing lacks, the major its driver
        registered (minor unknown: None), from the driver the path names; None when neither says."""
        if path in self.nodes:
            return self.nodes[path]
        name = path.removeprefix("/dev/")
        if name.startswith("nvidia-uvm"):
            driver = "nvidia-uvm"
        elif name.startswith("nvidia-caps"):
            driver = "nvidia-caps"
        elif GPU_NODE_RE.match(path) or name in ("nvidiactl", "nvidia-modeset"):
            driver = ""
        else:
            return None
        if not driver:
            return (FIXED_NVIDIA_MAJOR, None)
        return (self.majors[driver], None) if driver in self.majors else None

    def under(self, folder: str) -> dict[str, tuple[int, int]]:
        """The listed device nodes inside `folder` (a bind-mounted `/dev/nvidia-caps`)."""
        return {p: n for p, n in self.nodes.items() if p.startswith(folder.rstrip("/") + "/")}


def parse_device_nodes(text: str) -> DeviceNodes:
    """`cat /proc/devices` followed by `ls -ld /dev/nvidia* /dev/nvidia-caps/*`: NVIDIA majors by driver name, and
    every listed character device's (major, minor). Other lines (block devices, directories) are skipped.

    >>> nodes = parse_device_nodes("Character devices:\\n195 nvidia-frontend\\n509 nvidia-uvm\\n\\nBlock devices:\\n"
    ...                            "  8 sd\\ncrw-rw-rw- 1 root root 509,   1 Dec  6 10:00 /dev/nvidia-uvm-tools\\n")
    >>> nodes.majors["nvidia-uvm"], nodes.number_of("/dev/nvidia-uvm"), nodes.number_of("/dev/nvidia-uvm-tools")
    (509, (509, None), (509, 1))
    """
    majors: dict[str, int] = {}
    nodes: dict[str, tuple[int, int]] = {}
    section = ""
    for line in text.splitlines():
        if m := PROC_DEVICES_HEAD_RE.match(line):
            section = m["kind"]
        elif m := LS_DEVICE_RE.match(line.strip()):
            nodes[m["path"]] = (int(m["major"]), int(m["minor"]))
            section = ""
        elif section == "Character" and (m := PROC_DEVICES_ROW_RE.match(line)) and m["name"].startswith("nvidia"):
            majors[m["name"]] = int(m["major"])
    if not majors and not nodes and text.strip():
        raise ParseError("/proc/devices + ls -l /dev/nvidia*", "no NVIDIA character device in the output",
                         text.strip().splitlines()[0])
    return DeviceNodes(majors, nodes)


def denied_device_nodes(conf: LxcConf, devices: DeviceNodes) -> dict[str, str]:
    """Every NVIDIA node `conf` bind-mounts whose real device number (as the node has it) no cgroup allow rule
    of `conf` lets the container open, with why: `c 509:0 not allowed`, or that the node does not say its number.
    A bind-mounted folder (`/dev/nvidia-caps`) counts for each device the node lists inside it.

    >>> conf = parse_lxc_conf("lxc.cgroup2.devices.allow: c 195:* rwm\\n"
    ...                       "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file\\n")
    >>> denied_device_nodes(conf, DeviceNodes({"nvidia-uvm": 510}, {"/dev/nvidia-uvm": (510, 0)}))
    {'/dev/nvidia-uvm': 'c 510:0 not allowed'}
    """
    denied: dict[str, str] = {}
    for path in sorted(conf.bind_mounted):
        inside = devices.under(path)
        numbers: dict[str, tuple[int, int | None] | None] = dict(inside) if inside else {path: devices.number_of(path)}
        for node, number in numbers.items():
            if number is None:
                denied[node] = "its device number is unknown: the node lists no such device nor a driver for it"
                continue
            major, minor = number
            ok = conf.is_allowed(major, minor) if minor is not None else \
                any(a in (str(major), "*") and b == "*" for a, b in conf.cgroup_allows)
            if not ok:
                denied[node] = f"c {major}:{'*' if minor is None else minor} not allowed"
    return denied
