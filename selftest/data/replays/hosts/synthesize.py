"""Write the host-contract replays: SYNTHESIZED kpro6/Spark folders and the REAL H200 x2 folder.

    .venv/bin/python selftest/data/replays/hosts/synthesize.py        # rewrites selftest/data/replays/hosts/*/

SYNTHESIZED-* folders are made up from the documented output formats (../shared/reference/infra.md:
nvidia-smi CSV/XML §5, Proxmox configs §5.3, NCCL INFO lines §4, Ray State API JSON §6; iproute2 JSON,
`systemctl show`, `docker inspect`, `fuser -v`, `find -printf`, `sha256sum`), shaped after the real H200
captures where one exists (selftest/data/real/h200x2). Values the seeds do not give (bus ids, pids, hashes,
container names) are invented placeholders. Each folder answers exactly the commands `tests/hosts` sends
for inventories/kpro6.toml or inventories/spark.toml: the commands come from llmval.hostfacts, so a
changed command shows up as a ReplayMiss, not as a stale pass.

REAL-h200x2 holds the real captures (byte for byte) whose command is one the contract sends.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "src"))

from llmval import hostfacts as hf  # noqa: E402
from llmval.inventory import Inventory, load_inventory  # noqa: E402
from llmval.io.recording import CommandResult  # noqa: E402
from llmval.parsers.gpu_health import CLOCK_REASONS  # noqa: E402

HERE = Path(__file__).resolve().parent
Answers = dict[tuple[str, str], CommandResult]


def ok(host: str, command: str, stdout: str, rc: int = 0, stderr: str = "") -> CommandResult:
    return CommandResult(host, command, rc, stdout, stderr, 0.05)


# ---- kpro6: Proxmox node + LXC 129 ------------------------------------------------------------------------

KPRO6_DRIVER = "580.82.07"  # synthesized: any 580 driver >= the inventory's minimum
RTX = "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def _uuid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


@dataclasses.dataclass(frozen=True)
class Health:
    """Health fields of one synthesized GPU, in the real H200 capture's element names (nvsmi_device_v13).
    `reported=False` writes N/A where GB10 does (ECC, remapped rows, PCIe link [INFERRED])."""

    gen: int = 5
    width: int = 16
    pstate: str = "P0"
    persistence: str = "Enabled"
    dram_uncorrectable: int = 0
    dram_correctable: int = 0
    remap_corr: int = 0
    remap_pending: str = "No"
    active: tuple[str, ...] = ()
    """Clocks event reasons that are Active (e.g. hw_slowdown, hw_thermal_slowdown)."""
    temp_c: int = 46
    reported: bool = True


REASONS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
           "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting")


def _tree(tag: str, children: list[str] | str, depth: int) -> list[str]:
    pad = "\t" * depth
    if isinstance(children, str):
        return [f"{pad}<{tag}>{children}</{tag}>"]
    return [f"{pad}<{tag}>", *children, f"{pad}</{tag}>"]


def perf_elements(h: Health, depth: int = 2) -> list[str]:
    """`performance_state` and `clocks_event_reasons`."""
    reasons = [f"{chr(9) * (depth + 1)}<clocks_event_reason_{r}>{'Active' if r in h.active else 'Not Active'}"
               f"</clocks_event_reason_{r}>" for r in REASONS]
    return [*_tree("performance_state", h.pstate, depth), *_tree("clocks_event_reasons", reasons, depth)]


def health_elements(bus: str, h: Health, depth: int = 2) -> list[str]:
    na = "N/A"

    def v(value: object) -> str:
        return str(value) if h.reported else na

    d1, d2, d3 = depth + 1, depth + 2, depth + 3
    counters = [*_tree("sram_correctable", v(0), d3), *_tree("sram_uncorrectable_parity", v(0), d3),
                *_tree("sram_uncorrectable_secded", v(0), d3), *_tree("dram_correctable", v(h.dram_correctable), d3),
                *_tree("dram_uncorrectable", v(h.dram_uncorrectable), d3)]
    link = [*_tree("pcie_gen", [*_tree("max_link_gen", v(5), d3), *_tree("current_link_gen", v(h.gen), d3),
                                *_tree("device_current_link_gen", v(h.gen), d3),
                                *_tree("max_device_link_gen", v(5), d3), *_tree("max_host_link_gen", v(5), d3)], d2),
            *_tree("link_widths", [*_tree("max_link_width", v("16x"), d3),
                                   *_tree("current_link_width", v(f"{h.width}x"), d3)], d2)]
    return [
        *_tree("persistence_mode", h.persistence, depth),
        *_tree("pci", [*_tree("pci_bus_id", f"0000{bus.upper()}", d1), *_tree("pci_gpu_link_info", link, d1)], depth),
        *perf_elements(h, depth),
        *_tree("ecc_mode", [*_tree("current_ecc", v("Enabled"), d1), *_tree("pending_ecc", v("Enabled"), d1)], depth),
        *_tree("ecc_errors", [*_tree("volatile", counters, d2), *_tree("aggregate", counters, d2),
                              *_tree("unrepairable_memory", v("No"), d1)], depth),
        *_tree("retired_pages", [*_tree("pending_blacklist", na, d1), *_tree("pending_retirement", na, d1)], depth),
        *_tree("remapped_rows", [*_tree("remapped_row_corr", v(h.remap_corr), d1),
                                 *_tree("remapped_row_unc", v(0), d1),
                                 *_tree("remapped_row_pending", v(h.remap_pending), d1),
                                 *_tree("remapped_row_failure", v("No"), d1)], depth),
        *_tree("temperature", [*_tree("gpu_temp", f"{h.temp_c} C", d1)], depth),
    ]


def _header(driver: str, cuda: str, n: int) -> list[str]:
    return ['<?xml version="1.0" ?>', '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">', "<nvidia_smi_log>",
            "\t<timestamp>Mon Nov 30 03:30:00 2026</timestamp>", f"\t<driver_version>{driver}</driver_version>",
            f"\t<cuda_version>{cuda}</cuda_version>", f"\t<attached_gpus>{n}</attached_gpus>"]


def smi_xml(driver: str, cuda: str, gpus: list[tuple[str, str, int]], health: dict[str, Health] | None = None,
            *, architecture: str = "Blackwell", memory: str = "97887 MiB") -> str:
    """`nvidia-smi -q -x` with the elements the real H200 capture has (abridged to what parsers read); with
    `health` (bus id -> Health), also the health fields."""
    parts = _header(driver, cuda, len(gpus))
    for bus, name, minor in gpus:
        parts += [f'\t<gpu id="0000{bus.upper()}">', f"\t\t<product_name>{name}</product_name>",
                  f"\t\t<product_architecture>{architecture}</product_architecture>",
                  f"\t\t<uuid>{_uuid(bus)}</uuid>", f"\t\t<minor_number>{minor}</minor_number>",
                  *(health_elements(bus, health[bus]) if health is not None else []),
                  "\t\t<fb_memory_usage>", f"\t\t\t<total>{memory}</total>", "\t\t</fb_memory_usage>",
                  "\t\t<processes>", "\t\t</processes>", "\t</gpu>"]
    return "\n".join([*parts, "</nvidia_smi_log>", ""])


def smi_clocks(health: dict[str, Health]) -> str:
    """`nvidia-smi --query-gpu=pci.bus_id,clocks_event_reasons.<...> --format=csv,noheader` rows."""
    return "".join(f"0000{bus.upper()}, " + ", ".join("Active" if r in h.active else "Not Active"
                                                      for r in CLOCK_REASONS) + "\n" for bus, h in health.items())


KPRO6_BANNER = ("Linux version 6.14.8-2-pve (build@proxmox) (gcc (Debian 14.2.0-19) 14.2.0, GNU ld (GNU Binutils "
                "for Debian) 2.44) #1 SMP PREEMPT_DYNAMIC PMX 6.14.8-2 (2025-07-22T10:04Z) ()")
SPARK_BANNER = ("Linux version 6.11.0-1016-nvidia (buildd@bos03-arm64-062) (aarch64-linux-gnu-gcc-13 (Ubuntu "
                "13.3.0-6ubuntu2~24.04) 13.3.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #16-Ubuntu SMP PREEMPT_DYNAMIC "
                "Sun Sep 21 16:52:46 UTC 2025 (Ubuntu 6.11.0-1016.16-nvidia 6.11.11)")
XID_79 = "NVRM: Xid (PCI:0000:21:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def journal_xid(host: str, banner: str, xids: list[str]) -> str:
    """`journalctl -k -b --no-pager -g 'NVRM: Xid|Linux version'` (short format): the boot banner, then Xid lines."""
    lines = [f"Nov 30 02:11:04 {host} kernel: {banner}"]
    lines += [f"Nov 30 03:4{i}:17 {host} kernel: {x}" for i, x in enumerate(xids)]
    return "\n".join(lines) + "\n"


def query_rows(gpus: list[tuple[str, str, str, str, str]]) -> str:
    """`--query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total` noheader,nounits rows."""
    return "".join(f"{i}, {name}, {_uuid(bus)}, 0000{bus.upper()}, {driver}, {cap}, {mem}\n"
                   for i, (name, bus, driver, cap, mem) in enumerate(gpus))


UVM_MAJOR, CAPS_MAJOR = 509, 511
"""kpro6's nvidia-uvm and nvidia-caps majors (placeholders: the kernel gives them out at load time)."""


def lxc_conf(gpu_minors: list[int], uvm_allowed: bool = True) -> str:
    lines = ["arch: amd64", "cores: 64", "features: nesting=1", "hostname: kpro6-llm", "memory: 393216",
             "net0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:5A:01:29,ip=dhcp,type=veth", "ostype: ubuntu",
             "rootfs: local-zfs:subvol-129-disk-0,size=800G", "swap: 0", "unprivileged: 0",
             "lxc.cgroup2.devices.allow: c 195:* rwm"]
    lines += [f"lxc.cgroup2.devices.allow: c {UVM_MAJOR}:* rwm"] if uvm_allowed else []
    lines += [f"lxc.mount.entry: /dev/nvidia{m} dev/nvidia{m} none bind,optional,create=file" for m in gpu_minors]
    lines += [f"lxc.mount.entry: /dev/{n} dev/{n} none bind,optional,create=file"
              for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")]
    # a snapshot section from before the split: the parser must stop at the first [section]
    lines += ["", "[pre-split]", "arch: amd64", "hostname: kpro6-llm", "snaptime: 1760000000"]
    lines += [f"lxc.mount.entry: /dev/nvidia{m} dev/nvidia{m} none bind,optional,create=file" for m in range(8)]
    return "\n".join(lines) + "\n"


def device_nodes(gpu_minors: list[int]) -> str:
    """`cat /proc/devices; ls -ld /dev/nvidia* /dev/nvidia-caps/*` on the node (formats: Linux fs/proc/devices.c
    `%3d %s`, coreutils `ls -l` of character devices; `ls -d` shows the nvidia-caps folder as a `d` line)."""
    lines = ["Character devices:", "  1 mem", "  4 /dev/vc/0", "  4 tty", "  5 /dev/tty", "136 pts",
             "195 nvidia-frontend", f"{UVM_MAJOR} nvidia-uvm", f"{CAPS_MAJOR} nvidia-caps", "", "Block devices:",
             "  8 sd", "259 blkext"]
    row = "crw-rw-rw- 1 root root {:>3}, {:>3} Dec  1 19:58 {}"
    lines += [row.format(195, m, f"/dev/nvidia{m}") for m in gpu_minors]
    lines += ["drwxr-xr-x 2 root root      80 Dec  1 19:58 /dev/nvidia-caps",
              row.format(CAPS_MAJOR, 1, "/dev/nvidia-caps/nvidia-cap1").replace("crw-rw-rw-", "cr--------"),
              row.format(CAPS_MAJOR, 2, "/dev/nvidia-caps/nvidia-cap2").replace("crw-rw-rw-", "cr--r--r--"),
              row.format(195, 254, "/dev/nvidia-modeset"), row.format(UVM_MAJOR, 0, "/dev/nvidia-uvm"),
              row.format(UVM_MAJOR, 1, "/dev/nvidia-uvm-tools"), row.format(195, 255, "/dev/nvidiactl")]
    return "\n".join(lines) + "\n"


def vm_conf(bus_ids: list[str]) -> str:
    lines = ["bios: ovmf", "boot: order=scsi0", "cores: 32", "cpu: host", "efidisk0: local-zfs:vm-130-disk-0,size=1M",
             "machine: q35", "memory: 262144", "name: kpro6-vm", "net0: virtio=BC:24:11:5A:01:30,bridge=vmbr0",
             "ostype: l26", "scsi0: local-zfs:vm-130-disk-1,size=500G", "scsihw: virtio-scsi-single"]
    lines += [f"hostpci{n}: {b},pcie=1" for n, b in enumerate(bus_ids)]
    return "\n".join(sorted(lines)) + "\n"


def pci_listing(bound: dict[str, str]) -> str:
    return "".join(f"{b} 0x030200 ../../../bus/pci/drivers/{d}\n" for b, d in bound.items())


def fuser_table(holders: dict[str, list[tuple[int, str]]]) -> str:
    """`fuser -v /dev/nvidia* 2>&1`, as in the real capture: header, then per file its holders (first row
    names the file, further rows leave it blank)."""
    rows = [f"{'USER':>25} {'PID':>10} ACCESS COMMAND"]
    for dev, procs in holders.items():
        for i, (pid, comm) in enumerate(procs):
            rows.append(f"{dev + ':' if i == 0 else '':<20} {'root':>4} {pid:>10} F...m {comm}")
    return "\n".join(rows) + "\n"


def nccl_lines(host: str, pid: int, dev: int, msgs: list[str], prefix: str = "") -> list[str]:
    return [f"{prefix}{host}:{pid}:{pid} [{dev}] NCCL INFO {m}" for m in msgs]


def kpro6_answers(inv: Inventory, variant: str) -> Answers:
    node, ct = inv.host("kpro6"), inv.host("kpro6-ct129")
    assert node.proxmox is not None and ct.gpus is not None
    lxc = next(g for g in node.proxmox.guests if g.kind == "lxc")
    vm = next(g for g in node.proxmox.guests if g.kind == "vm")
    ct_bus = list(lxc.bus_ids)
    vm_bus = list(vm.bus_ids)
    a: Answers = {}

    def put(host: str, command: str, stdout: str, **kw) -> None:
        a[(host, command)] = ok(host, command, stdout, **kw)

    uname = "Linux {} 6.14.8-2-pve #1 SMP PREEMPT_DYNAMIC PMX 6.14.8-2 (2025-07-22T10:04Z) x86_64 GNU/Linux\n"
    put("kpro6", hf.UNAME.render(), uname.format("kpro6"))
    put("kpro6-ct129", hf.UNAME.render(), uname.format("kpro6-llm"))
    # the node: 4 GPUs on nvidia (LXC 129), 4 on vfio-pci (the VM)
    put("kpro6", hf.PCI_DRIVERS.render(), pci_listing({**dict.fromkeys(ct_bus, "nvidia"),
                                                       **dict.fromkeys(vm_bus, "vfio-pci")}))
    put("kpro6", hf.SMI_XML.render(), smi_xml(KPRO6_DRIVER, "13.0", [(b, RTX, i) for i, b in enumerate(ct_bus)]))
    put("kpro6", hf.LXC_CONF.render(id=lxc.id), lxc_conf(list(range(len(ct_bus))), variant != "uvm-not-allowed"))
    put("kpro6", hf.NVIDIA_DEVICE_NODES.render(), device_nodes(list(range(len(ct_bus) + len(vm_bus)))))
    put("kpro6", hf.VM_CONF.render(id=vm.id), vm_conf(vm_bus[:-1] if variant == "gpu-missing-from-split" else vm_bus))
    # the node's kernel log holds the container's Xid lines (hosts.gpus.health.kernel_log_via = "kpro6"); an Xid 79
    # earlier in this boot, the GPU back after a reset (listed again, so only the xid check sees it)
    put("kpro6", hf.XID_JOURNAL.render(), journal_xid("kpro6", KPRO6_BANNER, [XID_79] if variant == "xid79" else []))
    # the container
    health = {b: Health() for b in ct_bus}
    if variant == "pcie-downtrained":  # a riser trained Gen3 x8 while serving (P0)
        health[ct_bus[2]] = Health(gen=3, width=8)
    if variant == "ecc-uncorrectable":
        health[ct_bus[1]] = Health(dram_uncorrectable=2)
    if variant == "row-remap-pending":  # a remap after correctable errors, waiting for a GPU reset
        health[ct_bus[3]] = Health(dram_correctable=14, remap_corr=1, remap_pending="Yes")
    if variant == "thermal-slowdown":  # held down in both samples
        health[ct_bus[0]] = Health(active=("hw_slowdown", "hw_thermal_slowdown"), temp_c=94)
        put("kpro6-ct129", hf.SMI_CLOCKS.render(), smi_clocks(health))
    put("kpro6-ct129", hf.SMI_XML.render(),
        smi_xml(KPRO6_DRIVER, "13.0", [(b, RTX, i) for i, b in enumerate(ct_bus)], health))
    cap = "12.1" if variant == "wrong-cc" else "12.0"
    put("kpro6-ct129", hf.GPU_QUERY.render(),
        query_rows([(RTX, b, KPRO6_DRIVER, cap, "97887") for b in ct_bus]))
    workers = [(2211 + i, "python3") for i in range(len(ct_bus))]
    holders = {f"/dev/nvidia{i}": [workers[i]] for i in range(len(ct_bus))}
    holders["/dev/nvidiactl"] = workers
    holders["/dev/nvidia-uvm"] = workers
    put("kpro6-ct129", hf.GPU_HOLDERS.render(), fuser_table(holders))
    # P2P under the IOMMU in DMA-translation mode: the seeds' blocker. The status letters are SYNTHESIZED
    # (the seeds do not quote `nvidia-smi topo -p2p r` from kpro6); the matrix format is the real H200 one.
    p2p = "OK" if variant == "p2p-lifted" else "CNS"
    names = [f"GPU{i}" for i in range(len(ct_bus))]
    put("kpro6-ct129", hf.P2P_READ.render(),
        " \t\x1b[4m" + "\t".join(names) + "\t\x1b[0m\n"
        + "".join(f" {a}\t" + "\t".join("X" if a == b else p2p for b in names) + "\t\n" for a in names)
        + "\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n  CNS  = Chipset not supported\n")
    for pid, _ in workers:
        put("kpro6-ct129", hf.PROC_CGROUP.render(pid=pid), "0::/system.slice/sglang.service\n")
    env = "CUDA_VISIBLE_DEVICES=0,1,2,3 NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,P2P,SHM"
    put("kpro6-ct129", hf.UNIT_SHOW.render(unit="sglang.service"),
        f"MainPID=2190\nEnvironment={env}\nLoadState=loaded\nActiveState=active\nSubState=running\n"
        "UnitFileState=enabled\n")
    log: list[str] = []
    for rank in range(4):
        log += nccl_lines("kpro6-llm", 2211 + rank, rank, [
            "NCCL version 2.28.9+cuda13.0", "NET/Plugin: Could not find: libnccl-net.so", "NET/IB : No device found.",
            "NET/IB : Using [RO]; OOB eth0:10.1.2.129<0>", "NET/Socket : Using [0]eth0:10.1.2.129<0>",
            "Using network Socket", "NCCL_P2P_DISABLE set by environment to 1",
            f"ncclCommInitRankConfig comm 0x55d0{rank}0 rank {rank} nranks 4 cudaDev {rank} nvmlDev {rank} busId "
            f"{ct_bus[rank][5:7]}000 commId 0x1f2e3d4c5b6a7980 - Init START"])
    for ch in range(2):
        for rank in range(4):
            via = "P2P/CUMEM" if variant == "p2p-channel" and ch == 1 else "SHM/direct/direct"
            tag = f"{ch:02d}/0" if via.startswith("P2P") else f"{ch:02d}"
            log += nccl_lines("kpro6-llm", 2211 + rank, rank,
                              [f"Channel {tag} : {rank}[{rank}] -> {(rank + 1) % 4}[{(rank + 1) % 4}] via {via}"])
    for rank in range(4):
        log += nccl_lines("kpro6-llm", 2211 + rank, rank, [
            f"ncclCommInitRankConfig comm 0x55d0{rank}0 rank {rank} nranks 4 cudaDev {rank} nvmlDev {rank} busId "
            f"{ct_bus[rank][5:7]}000 commId 0x1f2e3d4c5b6a7980 - Init COMPLETE"])
    put("kpro6-ct129", hf.NCCL_JOURNAL.render(unit="sglang.service"), "\n".join(log) + "\n")
    return a


# ---- the two Sparks ---------------------------------------------------------------------------------------

SPARK_DRIVER = "580.95.05"
GB10_BUS = "0000000F:01:00.0"
IMAGE = "hellohal2064/vllm-qwen3.5-gb10:latest"
MODEL_FILES = [("config.json", 4_822), ("generation_config.json", 213), ("tokenizer.json", 12_807_982),
               ("tokenizer_config.json", 16_702), ("model.safetensors.index.json", 2_310_557)] + [
    (f"model-{i:05d}-of-00026.safetensors", 4_600_000_000 + i * 1_000_003) for i in range(1, 27)]


def ip_addr_json(ib_ip: str, external: str | None) -> str:
    links = [{"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536,
              "operstate": "UNKNOWN", "link_type": "loopback",
              "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host", "label": "lo"}]},
             {"ifindex": 2, "ifname": "enP7s7", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], "mtu": 1500,
              "operstate": "UP" if external else "DOWN", "link_type": "ether",
              "addr_info": [{"family": "inet", "local": external, "prefixlen": 24, "scope": "global"}]
              if external else []},
             {"ifindex": 4, "ifname": "enp1s0f0np0", "flags": ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"],
              "mtu": 1500, "operstate": "DOWN", "link_type": "ether", "addr_info": []},
             {"ifindex": 5, "ifname": "enp1s0f1np1", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
              "mtu": 9000, "operstate": "UP", "link_type": "ether",
              "addr_info": [{"family": "inet", "local": ib_ip, "prefixlen": 24, "scope": "global",
                             "label": "enp1s0f1np1"}]}]
    return json.dumps(links) + "\n"


def container_json(name: str, image: str, running: bool, env: dict[str, str], oom_loop: bool = False) -> str:
    """`docker inspect` (moby's State object; `RestartCount` beside it). `oom_loop`: a restart policy bringing back an
    engine the kernel OOM-kills at every start (status `restarting`, OOMKilled, exit 137, 14 restarts)."""
    state = {"Status": "running" if running else "exited", "Running": running, "Paused": False, "Restarting": False,
             "OOMKilled": False, "Dead": False, "ExitCode": 0 if running else 137, "Pid": 4242 if running else 0}
    if oom_loop:
        state.update(Status="restarting", Running=True, Restarting=True, OOMKilled=True, ExitCode=137, Pid=0)
    doc = [{"Id": hashlib.sha256(name.encode()).hexdigest(), "Name": f"/{name}", "State": state,
            **({"RestartCount": 14} if oom_loop else {}),
            "Image": "sha256:" + hashlib.sha256(image.encode()).hexdigest(),
            "Config": {"Image": image, "Env": [f"{k}={v}" for k, v in env.items()]}}]
    return json.dumps(doc, indent=4) + "\n"


def spark_answers(inv: Inventory, variant: str) -> Answers:
    a: Answers = {}

    def put(host: str, command: str, stdout: str, **kw) -> None:
        a[(host, command)] = ok(host, command, stdout, **kw)

    ips = {"spark1": "192.168.200.1", "spark2": "192.168.200.2"}
    for name in ("spark1", "spark2"):
        spec = inv.host(name)
        assert spec.env is not None
        put(name, hf.UNAME.render(), f"Linux {name} 6.11.0-1016-nvidia #16-Ubuntu SMP PREEMPT_DYNAMIC Sun Sep 21 "
            "16:52:46 UTC 2025 aarch64 aarch64 aarch64 GNU/Linux\n")
        cap = "12.0" if variant == "wrong-cc" and name == "spark2" else "12.1"
        put(name, hf.GPU_QUERY.render(),
            f"0, NVIDIA GB10, {_uuid(name)}, {GB10_BUS}, {SPARK_DRIVER}, {cap}, [N/A]\n")
        gb10 = {"000f:01:00.0": Health(reported=False)}  # GB10: ECC, remapped rows, PCIe link N/A
        put(name, hf.SMI_XML.render(), smi_xml(SPARK_DRIVER, "13.0", [("000f:01:00.0", "NVIDIA GB10", 0)], gb10,
                                               memory="N/A"))
        put(name, hf.XID_JOURNAL.render(), journal_xid(name, SPARK_BANNER, []))
        put(name, hf.IP_ADDR.render(), ip_addr_json(ips[name], "10.1.230.180" if name == "spark1" else None))
        env = {"PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
               **spec.env.required, "VLLM_HOST_IP": ips[name], "NVIDIA_VISIBLE_DEVICES": "all"}
        put(name, hf.CONTAINER_INSPECT.render(name="vllm-qwen35"),
            container_json("vllm-qwen35", IMAGE, True, env, oom_loop=variant == "engine-oom-loop" and name == "spark2"))
        glm = variant == "glm-running" and name == "spark1"
        put(name, hf.CONTAINER_INSPECT.render(name="vllm-glm-4.7-flash"),
            container_json("vllm-glm-4.7-flash", "vllm/vllm-openai:v0.11.0", glm, {"PATH": "/usr/bin"}))
        model = spec.model_files[0].path
        mtime = "1763900000.1234567890"
        put(name, hf.FILE_LIST.render(path=model),
            "".join(f"{size} {mtime} {model}/{rel}\n" for rel, size in MODEL_FILES))
        paths = sorted(f"{model}/{rel}" for rel, _ in MODEL_FILES)
        sums = []
        for path in paths:
            seed = path + ("-corrupted" if variant == "model-hash-mismatch" and name == "spark2"
                           and path.endswith("model-00017-of-00026.safetensors") else "")
            sums.append(f"{hashlib.sha256(seed.encode()).hexdigest()}  {path}")
        put(name, hf.SHA256.render(paths=paths), "\n".join(sums) + "\n")
    # spark1 is the head: the serve log (Ray forwards the worker's NCCL lines with its prefix) and Ray's node list
    worker = "(RayWorkerWrapper pid=3377, ip=192.168.200.2) "
    if variant == "socket-transport":
        net = ["NET/IB : No device found.", "NET/IB : Using [RO]; OOB enp1s0f1np1:{ip}<0>",
               "NET/Socket : Using [0]enp1s0f1np1:{ip}<0>", "Using network Socket"]
        via = "NET/Socket/0"
    else:
        net = ["NET/Plugin: Loaded net plugin NCCL RDMA Plugin v11 (v11)", "P2P plugin v11 IBext_v11",
               "NET/IB : Using [0]rocep1s0f1:1/RoCE [RO]; OOB enp1s0f1np1:{ip}<0>", "Using network IBext_v11",
               "NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'rocep1s0f1"]
        via = "NET/IBext_v11/0"
    lines = ["INFO 11-30 03:20:11 [__init__.py:216] Automatically detected platform cuda."]
    for rank, (host, pid, prefix) in enumerate([("spark1", 2901, ""), ("spark2", 3377, worker)]):
        ip = ips[host]
        msgs = ["NCCL version 2.28.3+cuda13.0", "NCCL_SOCKET_IFNAME set by environment to enp1s0f1np1",
                *[m.format(ip=ip) for m in net],
                f"ncclCommInitRankConfig comm 0xaaab{rank} rank {rank} nranks 2 cudaDev 0 nvmlDev 0 busId f01000 "
                "commId 0x6a5b4c3d2e1f0a9b - Init START"]
        for ch in range(2):
            msgs += [f"Channel {ch:02d}/0 : {1 - rank}[0] -> {rank}[0] [receive] via {via}",
                     f"Channel {ch:02d}/0 : {rank}[0] -> {1 - rank}[0] [send] via {via}"]
        msgs.append(f"ncclCommInitRankConfig comm 0xaaab{rank} rank {rank} nranks 2 cudaDev 0 nvmlDev 0 busId f01000 "
                    "commId 0x6a5b4c3d2e1f0a9b - Init COMPLETE")
        lines += nccl_lines(host, pid, 0, msgs, prefix)
    head = inv.host("spark1")
    assert head.nccl is not None
    put("spark1", hf.NCCL_FILE.render(path=head.nccl.log.value), "\n".join(lines) + "\n")
    nodes = []
    for host in ("spark1", "spark2"):
        dead = variant == "dead-ray-worker" and host == "spark2"
        nodes.append({"node_id": hashlib.sha256(host.encode()).hexdigest()[:56], "node_ip": ips[host],
                      "is_head_node": host == "spark1", "state": "DEAD" if dead else "ALIVE",
                      "state_message": "Unexpected termination: health check failed" if dead else None,
                      "node_name": ips[host],
                      "resources_total": {"CPU": 20.0, "GPU": 1.0, "memory": 85899345920.0,
                                          "object_store_memory": 36813973094.0, f"node:{ips[host]}": 1.0},
                      "labels": {"ray.io/node_id": hashlib.sha256(host.encode()).hexdigest()[:56]},
                      "start_time_ms": 1764472800000, "end_time_ms": 1764473900000 if dead else 0})
    put("spark1", hf.RAY_NODES_DOCKER.render(name="vllm-qwen35"), json.dumps(nodes, indent=2) + "\n")
    put("spark1", hf.RAY_STATUS_DOCKER.render(name="vllm-qwen35"), ray_status(nodes, variant == "dead-ray-worker"))
    return a


def ray_status(nodes: list[dict], dead: bool) -> str:
    """`ray status` of the two Sparks serving one TP=2 engine: both GPUs reserved by its placement group (format of
    Ray 2.x's autoscaler summary, `Active:` form; a dead node under `Recent failures:`)."""
    alive = [n for n in nodes if n["state"] == "ALIVE"]
    gpus = len(alive)
    lines = ["======== Autoscaler status: 2026-11-30 03:30:00.000000 ========", "Node status",
             "-" * 63, "Active:"] + [f" 1 node_{n['node_id']}" for n in alive] + [
             "Pending:", " (no pending nodes)", "Recent failures:"] + (
             [f" node_{n['node_id']}: NodeTerminated (ip: {n['node_ip']})" for n in nodes if n["state"] != "ALIVE"]
             if dead else [" (no failures)"]) + [
             "", "Resources", "-" * 63, "Usage:",
             f" {2.0 * gpus:.1f}/{20.0 * gpus:.1f} CPU ({2.0 * gpus:.1f} used of {2.0 * gpus:.1f} reserved in "
             "placement groups)",
             f" {float(gpus):.1f}/{float(gpus):.1f} GPU ({float(gpus):.1f} used of {float(gpus):.1f} reserved in "
             "placement groups)",
             f" 0B/{80.0 * gpus:.2f}GiB memory", f" 0B/{34.28 * gpus:.2f}GiB object_store_memory", "", "Demands:"] + (
             [" {'GPU': 1.0, 'CPU': 1.0} * 1 (PACK): 1+ pending placement groups"] if dead else
             [" (no resource demands)"])
    return "\n".join(lines) + "\n"


# ---- REAL: the H200 x2 captures whose command the contract sends -------------------------------------------

REAL = ROOT / "selftest" / "data" / "real" / "h200x2"
REAL_FILES = {  # capture file -> the contract command it answers (identical command strings)
    "uname-a.txt": hf.UNAME, "nvidia-smi-query-short.csv": hf.GPU_QUERY, "nvidia-smi-q.xml": hf.SMI_XML,
    "fuser-v-dev-nvidia.txt": hf.GPU_HOLDERS, "nvidia-smi-topo-p2p-r.txt": hf.P2P_READ,
}


REAL_HEALTH = ROOT / "selftest" / "data" / "real" / "h200x2-health"
REAL_HEALTH_FILES = {"xid-journal.txt": hf.XID_JOURNAL, "xid-dmesg.txt": hf.XID_DMESG}
"""The kernel-log answers come from a later lease of the same kind (2026-12-01, same image, kernel and driver)."""
REAL_NCCL_LOG = "/tmp/llmval-nccl/nccl.*.log"  # selftest/data/inventories/h200x2.toml [hosts.nccl]


def real_answers() -> Answers:
    a: Answers = {}
    for folder, files in ((REAL, REAL_FILES), (REAL_HEALTH, REAL_HEALTH_FILES)):
        rows = (folder / "MANIFEST.tsv").read_text().splitlines()
        manifest = {line.split("\t")[0]: line.split("\t") for line in rows}
        for name, command in files.items():
            _, rc, recorded = manifest[name]
            assert recorded == command.render(), (name, recorded, command.render())
            stderr = folder / f"{name}.stderr"
            a[("h200", recorded)] = CommandResult("h200", recorded, int(rc), (folder / name).read_text(),
                                                  stderr.read_text() if stderr.exists() else "", 0.0)
    # The inventory's NCCL log (kpro6's NCCL_P2P_DISABLE=1 on real NCCL): what `grep -hE 'NCCL (INFO|WARN)'`
    # prints of the recorded P2P-disabled all-reduce, filtered here exactly as grep would.
    nccl = hf.NCCL_FILE.render(path=REAL_NCCL_LOG)
    lines = (REAL / "nccl-allreduce-p2p-disabled.log").read_text().splitlines(keepends=True)
    a[("h200", nccl)] = CommandResult("h200", nccl, 0, "".join(x for x in lines if re.search(r"NCCL (INFO|WARN)", x)),
                                      "", 0.0)
    return a


KPRO6_VARIANTS = ("healthy", "wrong-cc", "gpu-missing-from-split", "p2p-channel", "p2p-lifted", "pcie-downtrained",
                  "ecc-uncorrectable", "row-remap-pending", "xid79", "thermal-slowdown", "uvm-not-allowed")
SPARK_VARIANTS = ("healthy", "wrong-cc", "socket-transport", "model-hash-mismatch", "dead-ray-worker", "glm-running",
                  "engine-oom-loop")


def write(folder: Path, answers: Answers, stem: str) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with open(folder / f"{stem}.jsonl", "w", encoding="utf-8") as out:
        for result in sorted(answers.values(), key=lambda r: (r.host, r.command)):
            out.write(json.dumps(dataclasses.asdict(result), ensure_ascii=False) + "\n")


def main() -> None:
    kpro6 = load_inventory(ROOT / "inventories" / "kpro6.toml")
    spark = load_inventory(ROOT / "inventories" / "spark.toml")
    builders: list[tuple[str, tuple[str, ...], Callable[[str], Answers]]] = [
        ("kpro6", KPRO6_VARIANTS, lambda v: kpro6_answers(kpro6, v)),
        ("spark", SPARK_VARIANTS, lambda v: spark_answers(spark, v)),
    ]
    for platform, variants, build in builders:
        for variant in variants:
            write(HERE / f"SYNTHESIZED-{platform}-{variant}", build(variant), "commands-synth")
    write(HERE / "REAL-h200x2", real_answers(), "commands-real")


if __name__ == "__main__":
    main()
