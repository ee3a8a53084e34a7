"""The Proxmox node's GPU split: PCI driver bindings and the guests' configs."""

from __future__ import annotations

from ..parsers.proxmox import (
    DeviceNodes,
    LxcConf,
    PciDriver,
    VmConf,
    parse_device_nodes,
    parse_lxc_conf,
    parse_pci_drivers,
    parse_vm_conf,
)
from ._command import NUMBER, Command
from ._fact import Reader, fact

PCI_DRIVERS = Command(
    "pci-drivers",
    "for d in /sys/bus/pci/devices/*; do [ \"$(cat \"$d/vendor\")\" = 0x10de ] && "
    "printf '%s %s %s\\n' \"${{d##*/}}\" \"$(cat \"$d/class\")\" \"$(readlink \"$d/driver\")\"; done; true",
)
LXC_CONF = Command("lxc-conf", "cat /etc/pve/lxc/{id}.conf", id=NUMBER)
VM_CONF = Command("vm-conf", "cat /etc/pve/qemu-server/{id}.conf", id=NUMBER)
NVIDIA_DEVICE_NODES = Command("nvidia-device-nodes",
                              "cat /proc/devices; ls -ld /dev/nvidia* /dev/nvidia-caps/* 2>/dev/null; true")
"""The node's device numbers: nvidia-uvm's and nvidia-caps' majors are dynamic (510 on one node, 508 on another)."""


def _guests(kind: str):
    return lambda h: [(g.id,) for g in (h.proxmox.guests if h.proxmox else []) if g.kind == kind]


@fact(PCI_DRIVERS, section="proxmox", checks="hosts.split.*")
def pci_drivers(host: Reader) -> dict[str, PciDriver]:
    """Driver bound to each NVIDIA PCI function (sysfs)."""
    return parse_pci_drivers(host.output(PCI_DRIVERS))


@fact(LXC_CONF, section="proxmox.guests", needs=_guests("lxc"))
def lxc_conf(host: Reader, vmid: int) -> LxcConf:
    """`/etc/pve/lxc/<id>.conf`: GPU device entries and cgroup allows."""
    return parse_lxc_conf(host.output(LXC_CONF, id=vmid))


@fact(NVIDIA_DEVICE_NODES, section="proxmox.guests", needs=lambda h: bool(_guests("lxc")(h)))
def nvidia_device_nodes(host: Reader) -> DeviceNodes:
    """The node's NVIDIA majors (`/proc/devices`) and device numbers (`ls -l /dev/nvidia*`): what an LXC guest's
    cgroup must allow for the nodes it bind-mounts."""
    return parse_device_nodes(host.output(NVIDIA_DEVICE_NODES))


@fact(VM_CONF, section="proxmox.guests", needs=_guests("vm"))
def vm_conf(host: Reader, vmid: int) -> VmConf:
    """`/etc/pve/qemu-server/<id>.conf`: `hostpciN` entries."""
    return parse_vm_conf(host.output(VM_CONF, id=vmid))
