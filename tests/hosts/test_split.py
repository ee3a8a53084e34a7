"""The Proxmox GPU split: each guest's GPUs bound to the right driver and passed in by its config."""

import pytest

from llmval.parsers.nvidia_smi import normalize_bus_id
from llmval.parsers.proxmox import denied_device_nodes

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]


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
    facts = facts_of(node.name)
    conf = facts.lxc_conf(guest.id)
    by_dev = sorted(k for k in conf.options if k.startswith("dev") and k[3:].isdigit())
    expected = ("an allow rule for every bind-mounted NVIDIA node's real major:minor (the node's /proc/devices and "
                "ls -l /dev/nvidia*: nvidia-uvm's and nvidia-caps' majors differ per node)")
    evidence = f"allowed: {sorted(':'.join(a) for a in conf.cgroup_allows)}"
    if not conf.bind_mounted:
        observed = f"{by_dev} entries (Proxmox allows them itself)" if conf.gpu_devices else "no GPU device entry"
        expect(node.name, f"hosts.split.lxc{guest.id}.cgroup", expected=expected, observed=observed,
               ok=bool(conf.gpu_devices), hint=f"/etc/pve/lxc/{guest.id}.conf: pass the GPUs (devN: or "
               "lxc.mount.entry)", evidence=evidence)
        return
    devices = facts.nvidia_device_nodes()
    denied = denied_device_nodes(conf, devices)
    majors = sorted({int(why.split()[1].split(":")[0]) for why in denied.values() if why.startswith("c ")})
    hint = ("; ".join(f"add `lxc.cgroup2.devices.allow: c {m}:* rwm`" for m in majors) or
            "load nvidia-uvm on the node (nvidia-modprobe -u -c=0) so its device and major exist")
    expect(node.name, f"hosts.split.lxc{guest.id}.cgroup", expected=expected,
           observed=denied or f"all {len(conf.bind_mounted)} bind-mounted nodes allowed", ok=bool(conf.gpu_devices)
           and not denied, hint=hint, evidence=f"{evidence}; node majors: {devices.majors}")


def test_vm_config_passes_exactly_its_gpus(vm_guest, facts_of, expect):
    node, guest = vm_guest.host, vm_guest.item
    conf = facts_of(node.name).vm_conf(guest.id)
    observed = sorted(conf.bus_ids) + sorted(f"mapping={h.mapping}" for h in conf.hostpci if h.mapping)
    observed += sorted(f"{bus} as vGPU (mdev={kind}), not passed through" for bus, kind in conf.vgpus.items())
    expect(node.name, f"hosts.split.vm{guest.id}.hostpci", expected=sorted(map(normalize_bus_id, guest.bus_ids)),
           observed=observed,
           hint=f"/etc/pve/qemu-server/{guest.id}.conf: one hostpciN: <bdf>,pcie=1 per GPU (no mdev=: that is a vGPU)")
