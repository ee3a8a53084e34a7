'''What the host contract reads from a host: each host fact declared once, with its read-only commands.

A host fact is one decorated function in one module of this package (testinfra style: one resource per
module). The declaration holds everything about the fact:

    # src/llmval/hostfacts/gpu_ecc.py
    from ..parsers.nvidia_smi import NOT_AVAILABLE
    from ._command import Command
    from ._fact import Reader, fact

    GPU_ECC = Command("gpu-ecc", "nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total "
                      "--format=csv,noheader,nounits")

    @fact(GPU_ECC, section="gpus.ecc_uncorrected_max", checks="hosts.gpu.ecc_uncorrected")
    def gpu_ecc(host: Reader) -> dict[int, int | None]:
        """Uncorrected ECC errors per GPU since the driver loaded (None: [N/A])."""
        rows = (line.split(",") for line in host.output(GPU_ECC).splitlines() if line.strip())
        return {int(i): None if v.strip() in NOT_AVAILABLE else int(v) for i, v in rows}

- the **command** (`Command(name, template, **kinds)`): the literal text is its allowed argv shape; every
  `{field}` names its argument kind (`PATH`, `GLOB`, `UNIT`, `CONTAINER`, `NUMBER`, `PATTERN`, `TEXT`);
  no value may start with `-` or hold a quote or control character (`_command.py`). A new fact or a
  new query field gets a NEW command: an existing fact's command never changes, so recordings stay valid;
- the **reader/parser**: `read(host, *args)`; `host.output(CMD, **args)` / `host.result(CMD, **args)`
  send only the fact's declared commands; `host.<other fact>(...)` reads another fact;
- the **inventory section** that needs it (`section=`, a dotted path in `[[hosts]]`), and `needs=` when
  "the section is set" is not the rule: a function of the HostSpec returning a bool or argument tuples;
  `ahead_if=` when the checks read it only if other facts say so (`gpu_apps` only where `gpu_holders` found
  holders): a function of the host's `HostFacts`; the run reads it ahead (`Prefetch`) only where it holds;
- the **checks that judge it** (`checks=` for the section field, or `judges={field: checks}` for several fields
  of the section, check ids or globs): `llmval.report.judged` lists a declared field that no held, broken or blocked
  verdict of its checks judged, and the run is not GREEN (no green by omission). A new inventory field is
  either judged by a declaration or a setting in `llmval.report.judged.SETTINGS`; a self-test fails otherwise.

Modules here are imported on first use of the package (no list to edit). Tests read a fact as
`facts.gpu_ecc()` (the `facts` fixture is a `HostFacts`), memoized per host with its error. The
read-only allow-list (`is_read_only`) is every declared command, plus the engine-log reads
(`engine_log.py`); `selftest/hosts/test_readonly.py` checks every recorded command against it and
mutates every declared command with writing options, which must all be refused.

    >>> SMI_XML.render()
    'nvidia-smi -q -x'
    >>> LXC_CONF.render(id=129)
    'cat /etc/pve/lxc/129.conf'
    >>> is_read_only("cat /etc/pve/lxc/129.conf; rm -rf /"), is_read_only("find -L -delete -type f -printf x")
    (False, False)
'''

from __future__ import annotations

import importlib
import pkgutil

from ._command import (
    CONTAINER,
    GLOB,
    NUMBER,
    PATH,
    PATTERN,
    TEXT,
    UNIT,
    Command,
    Kind,
    UnsafeArgument,
)
from ._fact import (
    COMMANDS,
    FACTS,
    Fact,
    HostFacts,
    Prefetch,
    Reader,
    allow,
    fact,
    fact_plan,
    failure_text,
    family_of,
    is_read_only,
    judged_fields,
    peer_facts,
    prefetch,
    read_ahead,
    watch_reads,
)

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")

from .engine_log import LOG_DOCKER, LOG_FILE, LOG_JOURNAL, LOG_LAUNCH, log_command, log_reader  # noqa: E402
from .env import PROCESS_ENV, PROCESS_ENVIRON, PROCESS_MATCHES, Environment, ServingProcessGone  # noqa: E402
from .files import (  # noqa: E402
    FILE_LIST,
    SHA256,
    FileDigest,
    GroupVerdict,
    HashCache,
    compare_group,
    digest_differences,
    group_digests,
    model_digests,
)
from .gpu import (  # noqa: E402
    GPU_HOLDERS,
    GPU_QUERY,
    P2P_READ,
    PROC_CGROUP,
    SMI_TEXT,
    SMI_XML,
    GpusLost,
    holder_is_allowed,
)
from .gpu_health import (  # noqa: E402
    GSP_KERNEL_DMESG,
    GSP_KERNEL_JOURNAL,
    KERNEL_GPU_DMESG,
    KERNEL_GPU_JOURNAL,
    OFF_BUS_DMESG,
    OFF_BUS_JOURNAL,
    SMI_CLOCKS,
    XID_DMESG,
    XID_JOURNAL,
)
from .nccl import NCCL_DOCKER, NCCL_FILE, NCCL_JOURNAL  # noqa: E402
from .network import IP_ADDR  # noqa: E402
from .proxmox import LXC_CONF, NVIDIA_DEVICE_NODES, PCI_DRIVERS, VM_CONF  # noqa: E402
from .ray import (  # noqa: E402
    RAY_ACTORS,
    RAY_ACTORS_DOCKER,
    RAY_JOBS,
    RAY_JOBS_DOCKER,
    RAY_NODES,
    RAY_NODES_DOCKER,
    RAY_STATUS,
    RAY_STATUS_DOCKER,
)
from .services import CONTAINER_INSPECT, UNIT_SHOW  # noqa: E402
from .system import UNAME  # noqa: E402

READ_ONLY: tuple[Command, ...] = tuple(COMMANDS.values())
"""Every command family a smoke or nightly run may send (facts and engine-log reads). Each only reads."""

__all__ = [
    "COMMANDS",
    "CONTAINER",
    "CONTAINER_INSPECT",
    "FACTS",
    "FILE_LIST",
    "GLOB",
    "GPU_HOLDERS",
    "GPU_QUERY",
    "GSP_KERNEL_DMESG",
    "GSP_KERNEL_JOURNAL",
    "IP_ADDR",
    "KERNEL_GPU_DMESG",
    "KERNEL_GPU_JOURNAL",
    "LOG_DOCKER",
    "LOG_FILE",
    "LOG_JOURNAL",
    "LOG_LAUNCH",
    "LXC_CONF",
    "NCCL_DOCKER",
    "NCCL_FILE",
    "NCCL_JOURNAL",
    "NUMBER",
    "NVIDIA_DEVICE_NODES",
    "OFF_BUS_DMESG",
    "OFF_BUS_JOURNAL",
    "P2P_READ",
    "PATH",
    "PATTERN",
    "PCI_DRIVERS",
    "PROCESS_ENV",
    "PROCESS_ENVIRON",
    "PROCESS_MATCHES",
    "PROC_CGROUP",
    "RAY_ACTORS",
    "RAY_ACTORS_DOCKER",
    "RAY_JOBS",
    "RAY_JOBS_DOCKER",
    "RAY_NODES",
    "RAY_NODES_DOCKER",
    "RAY_STATUS",
    "RAY_STATUS_DOCKER",
    "READ_ONLY",
    "SHA256",
    "SMI_CLOCKS",
    "SMI_TEXT",
    "SMI_XML",
    "TEXT",
    "UNAME",
    "UNIT",
    "UNIT_SHOW",
    "VM_CONF",
    "XID_DMESG",
    "XID_JOURNAL",
    "Command",
    "Environment",
    "Fact",
    "FileDigest",
    "GpusLost",
    "GroupVerdict",
    "HashCache",
    "HostFacts",
    "Kind",
    "Prefetch",
    "Reader",
    "ServingProcessGone",
    "UnsafeArgument",
    "allow",
    "compare_group",
    "digest_differences",
    "fact",
    "fact_plan",
    "failure_text",
    "family_of",
    "group_digests",
    "holder_is_allowed",
    "is_read_only",
    "judged_fields",
    "log_command",
    "log_reader",
    "model_digests",
    "peer_facts",
    "prefetch",
    "read_ahead",
    "watch_reads",
]
