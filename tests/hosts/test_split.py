"""The Proxmox GPU split: each guest's GPUs bound to the right driver and passed in by its config."""

import pytest

from llmval.parsers.nvidia_smi import normalize_bus_id

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]

NVIDIA_MAJOR = 195


def test_split_gpus_bound_to_expected_driver(split_guest, facts_of, expect):
    node, guest = split_guest.host, split_guest.item
    drivers = facts_of(node.name).pci_drivers()
    bound = {b: (drivers[b].driver if b in drivers else "absent") for b in map(normalize_bus_id, guest.bus_ids)}
    odd = {b: d for b, d in bound.items() if d != guest.driver}
    expect(node.name, f"hosts.split.{guest.kind}{guest.id}.driver", expected=f"{guest.driver} on {sorted(bound)}",
           observed=odd or "all bound as declared", ok=not odd,
           hint=f"bind by address: echo {guest.driver} > /sys/bus/pci/devices/<bdf>/driver_override, then reprobe")


def test_lxc_config_passes_exactly_its_gpus(lxc_guest, facts_of, expect):
    node, guest = lxc_guest.host, lxc_guest.item
    minors = {g.bus_id: g.minor_number for g in facts_of(node.name).smi_log().gpus}
    wanted = sorted(f"/dev/nvidia{minors[b]}" if minors.get(b) is not None else f"/dev/nvidia?({b} not on nvidia)"
                    for b in map(normalize_bus_id, guest.bus_ids))
    passed = sorted(facts_of(node.name).lxc_conf(guest.id).gpu_devices)
    expect(node.name, f"hosts.split.lxc{guest.id}.devices", expected=wanted, observed=passed,
           hint=f"/etc/pve/lxc/{guest.id}.conf: one devN: or lxc.mount.entry per GPU of the split, no others")


def test_lxc_cgroup_allows_nvidia_devices(lxc_guest, facts_of, expect):
    node, guest = lxc_guest.host, lxc_guest.item
    conf = facts_of(node.name).lxc_conf(guest.id)
    mounts_only = bool(conf.gpu_devices) and not any(k.startswith("dev") and k[3:].isdigit() for k in conf.options)
    allowed = sorted(map(str, conf.cgroup_majors))
    expect(node.name, f"hosts.split.lxc{guest.id}.cgroup", expected=f"c {NVIDIA_MAJOR}:* allowed (bind mounts need it)",
           observed=allowed, ok=not mounts_only or NVIDIA_MAJOR in conf.cgroup_majors or "*" in conf.cgroup_majors,
           hint=f"add `lxc.cgroup2.devices.allow: c {NVIDIA_MAJOR}:* rwm` "
           "(and the nvidia-uvm major from /proc/devices)")


def test_vm_config_passes_exactly_its_gpus(vm_guest, facts_of, expect):
    node, guest = vm_guest.host, vm_guest.item
    conf = facts_of(node.name).vm_conf(guest.id)
    observed = sorted(conf.bus_ids) + sorted(f"mapping={h.mapping}" for h in conf.hostpci if h.mapping)
    expect(node.name, f"hosts.split.vm{guest.id}.hostpci", expected=sorted(map(normalize_bus_id, guest.bus_ids)),
           observed=observed, hint=f"/etc/pve/qemu-server/{guest.id}.conf: one hostpciN: <bdf>,pcie=1 per GPU")
