"""The Proxmox node's GPU split: PCI driver bindings and the guests' configs."""

from __future__ import annotations

from ..parsers.proxmox import LxcConf, PciDriver, VmConf, parse_lxc_conf, parse_pci_drivers, parse_vm_conf
from ._command import NUMBER, Command
from ._fact import Reader, fact

PCI_DRIVERS = Command(
    "pci-drivers",
    "for d in /sys/bus/pci/devices/*; do [ \"$(cat \"$d/vendor\")\" = 0x10de ] && "
    "printf '%s %s %s\\n' \"${{d##*/}}\" \"$(cat \"$d/class\")\" \"$(readlink \"$d/driver\")\"; done; true",
)
LXC_CONF = Command("lxc-conf", "cat /etc/pve/lxc/{id}.conf", id=NUMBER)
VM_CONF = Command("vm-conf", "cat /etc/pve/qemu-server/{id}.conf", id=NUMBER)


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


@fact(VM_CONF, section="proxmox.guests", needs=_guests("vm"))
def vm_conf(host: Reader, vmid: int) -> VmConf:
    """`/etc/pve/qemu-server/<id>.conf`: `hostpciN` entries."""
    return parse_vm_conf(host.output(VM_CONF, id=vmid))
