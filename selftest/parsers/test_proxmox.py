"""Proxmox guest configs, sysfs driver listings and `lspci -k` (formats: pve-docs pct.adoc/qm.adoc, infra.md §5.3)."""

from __future__ import annotations

import pytest

from llmval.core.errors import ParseError
from llmval.parsers.proxmox import parse_lspci_k, parse_lxc_conf, parse_pci_drivers, parse_vm_conf
from selftest.strategies import ROOT

REAL = ROOT / "selftest" / "data" / "real" / "h200x2"

CLASSIC = """arch: amd64
hostname: ct
lxc.cgroup2.devices.allow: c 195:* rwm
lxc.cgroup2.devices.allow: c 509:* rwm
lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file
lxc.mount.entry: /dev/nvidia2 dev/nvidia2 none bind,optional,create=file 0 0
lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file
lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file

[snap1]
lxc.mount.entry: /dev/nvidia5 dev/nvidia5 none bind,optional,create=file
"""


def test_lxc_mount_entries_stop_at_the_first_section():
    conf = parse_lxc_conf(CLASSIC)
    assert conf.gpu_devices == {"/dev/nvidia0", "/dev/nvidia2"}  # nvidia5 is in a snapshot section
    assert conf.gpu_minors == {0, 2}
    assert conf.other_nvidia_nodes == {"/dev/nvidiactl", "/dev/nvidia-uvm"}
    assert conf.cgroup_majors == {195, 509}


def test_lxc_dev_entries_with_and_without_path_key():
    conf = parse_lxc_conf("dev0: /dev/nvidia1,gid=44\ndev1: path=/dev/nvidia3,mode=0666\ndev2: /dev/nvidiactl\n")
    assert conf.gpu_devices == {"/dev/nvidia1", "/dev/nvidia3"} and conf.cgroup_majors == set()


def test_lxc_line_without_key_is_a_parse_error():
    with pytest.raises(ParseError, match="LXC config"):
        parse_lxc_conf("arch: amd64\nthis is not an option\n")


def test_vm_hostpci_forms():
    conf = parse_vm_conf("hostpci0: 0000:81:00.0,pcie=1\nhostpci1: host=a1:00.0;c1:00.0,x-vga=1\n"
                         "hostpci2: 02:00,pcie=on\nhostpci3: mapping=gpu-e1,pcie=1\nmemory: 4096\n")
    assert conf.bus_ids == {"0000:81:00.0", "0000:a1:00.0", "0000:c1:00.0", "0000:02:00.0"}
    assert [h.mapping for h in conf.hostpci] == [None, None, None, "gpu-e1"]


def test_sysfs_listing_with_real_readlink_output():
    link = (REAL / "sysfs-gpu-driver.txt").read_text().splitlines()[2]  # the real `readlink .../driver` line
    assert link == "../../../bus/pci/drivers/nvidia"
    drivers = parse_pci_drivers(f"0000:00:06.0 0x030200 {link}\n0000:81:00.0 0x030200 ../../../bus/pci/drivers/"
                                "vfio-pci\n0000:c1:00.0 0x030200\n")
    assert {b: d.driver for b, d in drivers.items()} == {"0000:00:06.0": "nvidia", "0000:81:00.0": "vfio-pci",
                                                         "0000:c1:00.0": None}


def test_lspci_k_blocks():
    text = ("01:00.0 3D controller [0302]: NVIDIA Corporation GB202GL [RTX PRO 6000 Blackwell Server Edition] "
            "[10de:2bb5] (rev a1)\n\tSubsystem: NVIDIA Corporation Device [10de:204e]\n"
            "\tKernel driver in use: nvidia\n\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia\n"
            "81:00.0 3D controller [0302]: NVIDIA Corporation GB202GL [10de:2bb5] (rev a1)\n"
            "\tKernel driver in use: vfio-pci\n"
            "c1:00.0 3D controller [0302]: NVIDIA Corporation GB202GL [10de:2bb5] (rev a1)\n"
            "\tKernel modules: nvidiafb, nouveau\n")
    assert parse_lspci_k(text) == {"0000:01:00.0": "nvidia", "0000:81:00.0": "vfio-pci", "0000:c1:00.0": None}
