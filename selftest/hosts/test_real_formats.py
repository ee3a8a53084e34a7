"""Host-side real-world formats (issue 13), each on a real-shaped input that the suite got wrong before:

- an LXC config bind-mounting GPU nodes from a non-/dev source (`/lxc/<id>/devices/nvidia0 dev/nvidia0`);
- its cgroup check actually testing each bind-mounted minor (Frigate's config allows `c 195:0` and `c 195:1`);
- `hostpciN: 01:00.0,mdev=nvidia-63`: a vGPU, not full passthrough;
- GB10 `[N/A]` memory.used in the launch idle wait (it waited forever) and `[N/A]` memory in the queries;
- NCCL's merged-device form `NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} ...`;
- the `process:` env source reading the serving process, not the oldest match (a wrapper).

The project's own fixtures below are written here in the real formats; where the public real outputs in
`../shared/reference/real-outputs/` exist they are parsed too (skipped, saying so, when that folder is absent).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from llmval.inventory import EnvSpec, HostSpec, StepSpec, WaitSpec
from llmval.launch import parse_gpu_memory_used_mib
from llmval.launch._stack import Stack
from llmval.parsers.nccl import parse_nccl_log
from llmval.parsers.nvidia_smi import parse_nvidia_smi_query
from llmval.parsers.proxmox import denied_device_nodes, parse_device_nodes, parse_lxc_conf, parse_vm_conf
from llmval.parsers.ray import parse_ray_nodes, parse_ray_status
from selftest.strategies import ROOT

REAL_OUTPUTS = ROOT.parent / "shared" / "reference" / "real-outputs"
if not REAL_OUTPUTS.is_dir():
    REAL_OUTPUTS = ROOT.parents[1] / "shared" / "reference" / "real-outputs"


def _real(relpath: str) -> str:
    path = REAL_OUTPUTS / relpath
    if not path.exists():
        pytest.skip(f"the public real outputs are not here ({path}): only the project's own fixture was checked")
    return path.read_text()


# written in the format of 07_proxmox/pve-lxc-2051.conf (Frigate): per-minor allows, nodes made under /lxc/<id>/
LXC_BIND_FROM_ELSEWHERE = """arch: amd64
hostname: llm
unprivileged: 1
lxc.cgroup2.devices.allow: c 195:0 rwm
lxc.cgroup2.devices.allow: c 195:255 rwm
lxc.mount.entry: /lxc/129/devices/nvidia0 dev/nvidia0 none bind,optional,create=file
lxc.mount.entry: /lxc/129/devices/nvidia1 dev/nvidia1 none bind,optional,create=file
lxc.mount.entry: /lxc/129/devices/nvidiactl dev/nvidiactl none bind,optional,create=file
"""


def test_lxc_bind_mounts_from_a_non_dev_source_count_as_gpu_devices():
    conf = parse_lxc_conf(LXC_BIND_FROM_ELSEWHERE)
    assert sorted(conf.gpu_devices) == ["/dev/nvidia0", "/dev/nvidia1"]  # before: [] ("no GPU devices")
    assert conf.other_nvidia_nodes == {"/dev/nvidiactl"}


def test_lxc_cgroup_allows_are_judged_per_minor():
    conf = parse_lxc_conf(LXC_BIND_FROM_ELSEWHERE)
    assert conf.is_allowed(195, 0) and conf.is_allowed(195, 255)
    assert not conf.is_allowed(195, 1)  # nvidia1 is mounted but its minor is not allowed
    assert parse_lxc_conf("lxc.cgroup2.devices.allow: c 195:* rwm\n").is_allowed(195, 7)
    assert parse_lxc_conf("lxc.cgroup2.devices.allow: a\n").is_allowed(195, 7)


def test_real_frigate_lxc_config_shows_its_two_gpus():
    conf = parse_lxc_conf(_real("07_proxmox/pve-lxc-2051.conf_nvidia-2gpu-bindmounts_frigate8652_excerpt.txt"))
    assert sorted(conf.gpu_devices) == ["/dev/nvidia0", "/dev/nvidia1"]
    assert conf.is_allowed(195, 0) and conf.is_allowed(195, 1) and not conf.is_allowed(195, 2)


def test_mdev_hostpci_entry_is_a_vgpu_not_passthrough():
    conf = parse_vm_conf("bios: ovmf\nhostpci0: 01:00.0,mdev=nvidia-63\nhostpci1: 0000:02:00.0,pcie=1\n")
    assert conf.bus_ids == {"0000:02:00.0"}  # before: 0000:01:00.0 counted as passed through
    assert conf.vgpus == {"0000:01:00.0": "nvidia-63"}


def test_gb10_memory_not_reported_is_none_everywhere_it_is_read():
    row = "0, NVIDIA GB10, GPU-a, 0000000F:01:00.0, 580.95.05, 12.1, [N/A]\n"
    assert parse_nvidia_smi_query(row)[0].memory_total_mib is None
    assert parse_gpu_memory_used_mib("0, [N/A]\n") == {0: None}
    assert parse_gpu_memory_used_mib("0, [N/A]\n1, 512 MiB\n") == {0: None, 1: 512}  # without nounits


def test_real_gb10_memory_cells_read_as_not_reported():
    used, total, _ = (c.strip() for c in _real("01_nvidia-smi_spark/gb10_query-gpu_memory_util_llama-swap-782.csv")
                      .splitlines()[0].split(","))
    assert parse_gpu_memory_used_mib(f"0, {used}\n") == {0: None}
    assert parse_nvidia_smi_query(f"0, NVIDIA GB10, GPU-a, 0000000F:01:00.0, 580.95.05, 12.1, {total}\n")[0] \
        .memory_total_mib is None


def test_launch_idle_wait_is_not_busy_forever_on_gb10():
    step = StepSpec(host="spark1", run="nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits",
                    wait=WaitSpec(gpu_memory_used_mib_max=1024))
    satisfied, seen = Stack._condition(step, 0, "0, [N/A]\n")
    assert satisfied, seen  # before: [N/A] counted as busy, so the wait ran into its timeout every time
    assert "[N/A]" in seen and "unified memory" in seen
    busy, seen = Stack._condition(step, 0, "0, [N/A]\n1, 40000\n")
    assert not busy and "{1: 40000}" in seen


MERGED_NCCL = (
    "node1:4242:4242 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so\n"
    "node1:4242:4242 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [RO]; "
    "OOB enp1s0f1np1:192.168.200.1<0>\n"
    "node1:4242:4300 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n"
)


def test_nccl_merged_device_form_yields_the_rdma_devices():
    log = parse_nccl_log(MERGED_NCCL)
    assert log.ib_devices == [("mlx5_2", "RoCE"), ("mlx5_3", "RoCE")]  # before: [] ("NET/IB found no device")
    assert log.transports == {"ib"}


def test_real_nccl_ib_device_lines_still_parse():
    log = parse_nccl_log(_real("03_nccl/spark-gb10_vllm_nccl-2.31.2_roce_init_eugr-spark-vllm-docker_issue411.log"))
    assert log.ib_devices == [("rocep1s0f0", "RoCE"), ("roceP2p1s0f0", "RoCE")]


@pytest.fixture
def wrapped_server(tmp_path):
    """A real process tree shaped like `timeout 90 env NCCL_P2P_DISABLE=1 ... torchrun ...`: the oldest match
    (the wrapper) lacks the variable its child got; the child is the serving process."""
    marker = f"llmval-selftest-serve-{os.getpid()}-{time.monotonic_ns()}"
    child = f"import time; time.sleep(60)  # {marker}"
    wrapper = subprocess.Popen(
        ["timeout", "60", "env", "LLMVAL_PROBE=child", sys.executable, "-c", child], env={**os.environ},
        start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # bounded: until the child has exec'd
        out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
        if len(out) >= 2:
            break
        time.sleep(0.05)
    yield marker, wrapper.pid
    os.killpg(wrapper.pid, 15)
    wrapper.wait(timeout=10)


def test_process_env_reads_the_serving_child_not_the_wrapper(wrapped_server):
    from llmval.hostfacts import HostFacts
    from llmval.inventory import Source
    from llmval.io.transport import connect

    marker, wrapper_pid = wrapped_server
    source = EnvSpec(source=f"process:{marker}").source
    assert isinstance(source, Source) and source.kind == "process"
    env = HostFacts(connect(HostSpec(name="me", platform="p"))).environment(source)
    assert env is not None and env.get("LLMVAL_PROBE") == "child"  # the oldest match (timeout) lacks it
    assert f"pid {wrapper_pid} " not in env.read_from and env.read_from.startswith("pid ")


def test_serving_process_is_the_deepest_match_not_a_wrapper_nor_a_passer_by():
    """The shape seen on this machine (2026-12-01): `flock ... python -m vllm...` (the oldest match, a wrapper),
    its python child (the server), and a younger process whose command line merely mentions the pattern."""
    from llmval.hostfacts.env import parse_process_matches, serving_process

    matches = parse_process_matches("16209 16105     5 python\n27791     1  1620 flock\n29807 27791  1503 python\n")
    assert serving_process(matches).pid == 29807
    assert serving_process([]) is None
    # seen a minute later: another engine's `flock` still waiting for the lock (no child yet) is older than the
    # running engine of a separate tree; a waiting wrapper is never the serving process
    matches = parse_process_matches(" 3768 31662   273 python\n 7167  7165     2 python\n31703 31701   608 flock\n")
    assert serving_process(matches).pid == 3768


def test_a_lost_gpu_is_named_in_nvidia_smis_own_words(tmp_path):
    """nvidia-smi prints "No devices were found" on stdout with exit 6 (stderr empty): the cause keeps its words."""
    from llmval.hostfacts import GpusLost, HostFacts
    from llmval.inventory import LocalTransport
    from llmval.io.transport import connect

    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    (tmp_path / "nvidia-smi").chmod(0o755)
    spec = HostSpec(name="me", platform="p", transport=LocalTransport(path_prepend=[str(tmp_path)]))
    facts = HostFacts(connect(spec))
    assert facts.gpus_lost() == "nvidia-smi says the GPUs are gone: exit code 6: No devices were found"
    with pytest.raises(GpusLost):
        facts.gpus()


# SYNTHESIZED in `pct config` form (pve-docs pct.adoc): the two-GPU container of the seeds with its uvm allow line
# gone, and a node whose nvidia-uvm driver got major 510 at load (Linux `/proc/devices`, coreutils `ls -l`).
LXC_UVM_ALLOW_REMOVED = """lxc.cgroup2.devices.allow: c 195:* rwm
lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file
lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file
lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file
lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file
lxc.mount.entry: /dev/nvidia-caps dev/nvidia-caps none bind,optional,create=dir
"""
NODE_DEVICES_510 = """Character devices:
195 nvidia-frontend
236 nvidia-caps
510 nvidia-uvm

Block devices:
  8 sd
crw-rw-rw- 1 root root 195,   0 Dec  6 09:12 /dev/nvidia0
crw-rw-rw- 1 root root 195,   1 Dec  6 09:12 /dev/nvidia1
drwxr-xr-x 2 root root      80 Dec  6 09:12 /dev/nvidia-caps
cr-------- 1 root root 236,   1 Dec  6 09:12 /dev/nvidia-caps/nvidia-cap1
crw-rw-rw- 1 root root 510,   0 Dec  6 09:12 /dev/nvidia-uvm
crw-rw-rw- 1 root root 195, 255 Dec  6 09:12 /dev/nvidiactl
"""


def test_lxc_without_the_uvm_allow_is_denied_by_the_nodes_real_major():
    """Issue 44.2: a 195-only rule used to pass "all 2 bind-mounted nodes allowed"; CUDA then fails at its first
    allocation (no /dev/nvidia-uvm). Every bind-mounted node is judged by the major the node really gave it."""
    conf, devices = parse_lxc_conf(LXC_UVM_ALLOW_REMOVED), parse_device_nodes(NODE_DEVICES_510)
    assert denied_device_nodes(conf, devices) == {"/dev/nvidia-caps/nvidia-cap1": "c 236:1 not allowed",
                                                  "/dev/nvidia-uvm": "c 510:0 not allowed"}
    fixed = parse_lxc_conf(LXC_UVM_ALLOW_REMOVED + "lxc.cgroup2.devices.allow: c 510:* rwm\n"
                           "lxc.cgroup2.devices.allow: c 236:* rwm\n")
    assert denied_device_nodes(fixed, devices) == {}
    unloaded = parse_device_nodes("Character devices:\n195 nvidia-frontend\n\nBlock devices:\n  8 sd\n")
    assert "/dev/nvidia-uvm" in denied_device_nodes(fixed, unloaded)  # uvm not loaded: its major unknown


def test_real_ray_status_of_a_two_node_vllm_cluster_is_read():
    """`ray status` (current `Active:` format, 06_ray of the public real outputs): two active nodes, no GPU taken."""
    status = parse_ray_status(_real("06_ray/ray-status_vllm-2node-pp2_Active-format_vllm-issue15217.txt"))
    assert len(status.active) == 2 and status.pending == () and status.failures == () and status.demands == ()
    assert (status.usage["GPU"].used, status.usage["GPU"].total, status.gpus_all_taken) == (0.0, 2.0, False)


# SYNTHESIZED in Ray's `ray list nodes` table form (ray/util/state/state_cli.py `format_list_api_output`: tabulate
# `plain` with an index column, each column as wide as its widest cell plus two spaces, dict cells YAML-dumped over
# several lines; as public KubeRay/GKE guides show it); ids and addresses invented: the Sparks, the second DEAD.
TABLE_HEADERS = ("NODE_ID", "NODE_IP", "IS_HEAD_NODE", "STATE", "STATE_MESSAGE", "NODE_NAME", "RESOURCES_TOTAL",
                 "LABELS")
TABLE_ROWS = [("4b1d0e7a9c1f4f6b8e2d3c4b5a69788776655443322110ffeeddccbb", "192.168.200.1", "True", "ALIVE", "",
               "192.168.200.1", "CPU: 20.0\nGPU: 1.0\nmemory: 80.000 GiB", "ray.io/node_id: 4b1d0e7a"),
              ("9a8b7c6d5e4f30211223344556677889900aabbccddeeff001122334", "192.168.200.2", "False", "DEAD",
               "Unexpected termination: health check failed", "192.168.200.2", "CPU: 20.0\nGPU: 1.0",
               "ray.io/node_id: 9a8b7c6d")]


def _plain_table(headers, rows) -> str:
    """tabulate's `plain` format with `showindex=True`, as Ray prints its lists (multi-line cells continue below)."""
    columns = [("", *(str(i) for i in range(len(rows)))),
               *((h, *(r[c] for r in rows)) for c, h in enumerate(headers))]
    widths = [max(len(line) for cell in col for line in cell.split("\n")) for col in columns]
    out = []
    for index in range(len(rows) + 1):
        cells = [col[index].split("\n") for col in columns]
        for k in range(max(len(c) for c in cells)):
            parts = [(c[k] if k < len(c) else "").rjust(w) if i == 0 else (c[k] if k < len(c) else "").ljust(w)
                     for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
            out.append("  ".join(parts).rstrip())
    return "\n".join(out)


RAY_NODES_TABLE = ("======== List: 2026-11-30 03:30:00.000000 ========\nStats:\n------------------------------\n"
                   "Total: 2\n\nTable:\n------------------------------\n" + _plain_table(TABLE_HEADERS, TABLE_ROWS)
                   + "\n")


def test_ray_list_nodes_in_its_table_form_gives_the_same_nodes_as_json():
    nodes = parse_ray_nodes(RAY_NODES_TABLE)
    assert [(n.ip, n.is_head, n.state, n.gpus) for n in nodes] == [
        ("192.168.200.1", True, "ALIVE", 1.0), ("192.168.200.2", False, "DEAD", 1.0)]
    assert nodes[1].state_message == "Unexpected termination: health check failed" and not nodes[1].is_alive
