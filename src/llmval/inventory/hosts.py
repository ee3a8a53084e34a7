"""What the inventory says about hosts: how to reach them and what must be true on them."""

from __future__ import annotations

import datetime
import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    StringConstraints,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from ._base import Spec
from .values import (
    BUS_ID_RE,
    GLOB,
    GPU_UUID_RE,
    Address,
    BusId,
    ContainerName,
    EnvKey,
    GpuUuid,
    HostPath,
    ImageName,
    InterfaceName,
    Label,
    Name,
    Seconds,
    Text,
    UserName,
    UserPath,
    check_source,
)


class Source(Spec):
    """Where a host fact is read from, typed at load: `kind` (`systemd`, `docker`, `process`, `file`,
    `journal`) and `value` (unit, container, pgrep pattern, path). Written in TOML as `"kind:value"`,
    and printed back the same way."""

    kind: str
    value: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


SOURCE_VALUE_RE = re.compile(r"[^\x00-\x1f\x7f']+")


def _source_type(what: str, **kinds: str) -> Any:
    """A `"kind:value"` inventory string, validated at load into a `Source` of one of `kinds`."""

    def parse(value: Any) -> Any:
        if isinstance(value, Source) and value.kind in kinds:
            return value
        if not isinstance(value, str):
            raise ValueError(f"{what} must be a string, one of {list(kinds.values())}")
        kind, sep, rest = value.partition(":")
        if not sep or kind not in kinds:
            raise ValueError(f"{value[:80]!r} is not one of {list(kinds.values())}")
        if not rest:
            raise ValueError(f"{value[:80]!r}: say which after `{kind}:`")
        if rest.startswith("-") or SOURCE_VALUE_RE.fullmatch(rest) is None:
            raise ValueError(f"{value[:80]!r}: the value may not start with '-' nor hold quotes or control "
                             "characters (it is passed to a host command)")
        return {"kind": kind, "value": rest}

    pattern = "^(" + "|".join(kinds) + "):[^-'].*$"
    return Annotated[Source, BeforeValidator(parse), PlainSerializer(str, return_type=str),
                     WithJsonSchema({"type": "string", "pattern": pattern, "description": " or ".join(kinds.values())})]


EnvSource = _source_type("env.source", systemd="systemd:<unit>", docker="docker:<container>",
                         process="process:<pgrep -f pattern>")
NcclLogSource = _source_type("nccl.log", file="file:<path>", journal="journal:<unit>", docker="docker:<container>")
RunInSource = _source_type("ray.run_in", docker="docker:<container>")


class LocalTransport(Spec):
    """Commands run on this machine."""

    kind: Literal["local"] = "local"
    path_prepend: list[UserPath] = Field([], max_length=64)
    """Directories put in front of PATH for this host's commands (tools installed outside PATH)."""


class SshTransport(Spec):
    """Commands run over one multiplexed ssh connection."""

    kind: Literal["ssh"] = "ssh"
    address: Address
    """Host name or IP address (never starting with `-`: ssh would read it as an option)."""
    user: UserName = "root"
    port: int = Field(22, ge=1, le=65535)
    identity_file: UserPath | None = None
    ssh_config: UserPath | None = None
    """An ssh_config file to use instead of ~/.ssh/config."""
    password_env: EnvKey | None = None
    """Name of the environment variable holding a password, if one is needed; never the password."""


class DockerTransport(Spec):
    """Commands run inside a docker container (docker exec), on this machine or on `via` over ssh."""

    kind: Literal["docker"] = "docker"
    container: ContainerName
    via: Name | None = None
    """Name of another host in the inventory that runs the docker daemon; this machine when absent."""


class PctTransport(Spec):
    """Commands run inside a Proxmox LXC container: ssh to the node, then `pct exec <id> -- sh -c ...`."""

    kind: Literal["pct"] = "pct"
    via: Name
    """Name of the Proxmox node's host entry (an ssh host) in this inventory."""
    container: int = Field(ge=100, le=999_999_999)
    """The LXC container id (vmid)."""


Transport = Annotated[
    LocalTransport | SshTransport | DockerTransport | PctTransport, Field(discriminator="kind")
]


HealthCheck = Literal["pcie_link", "ecc_uncorrectable", "row_remap", "xid", "throttle", "persistence_mode"]
IsoDate = Annotated[str, BeforeValidator(lambda v: v.isoformat() if isinstance(v, datetime.date) else v),
                    StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]
"""A day, `2026-12-01` (a TOML date or a string)."""


class EccAcknowledgement(Spec):
    """An aggregate uncorrectable ECC count the owners know of and have dealt with, so that one old event does not
    keep the host failing `hosts.gpu.health.ecc_uncorrectable` forever. The count is held while the counter reads
    exactly `count`; a higher reading is a new event and fails; a lower one fails too: the acknowledgement is stale
    (another card, or its counters cleared) and would hide the next event. Volatile counts (since the driver
    loaded) cannot be acknowledged: any fails.

    Usage: `[[hosts.gpus.health.ecc_acknowledged]]` `gpu = "0000:00:06.0"`, `counter = "sram_uncorrectable_parity"`,
    `count = 1`, `acknowledged_on = 2026-12-01`, `reason = "one SRAM parity event before the lease; dcgmi diag -r 3
    passed"`."""

    gpu: Annotated[str, StringConstraints(pattern=f"{BUS_ID_RE}|{GPU_UUID_RE}")]
    """The GPU: its bus id as nvidia-smi prints it (`0000:00:06.0`) or its UUID (`GPU-...`; the count is kept on the
    card, so the UUID follows it to another slot)."""
    counter: str = Field(pattern=r"^[a-z0-9_]+(/[a-z0-9_]+)?$", max_length=128)
    """The aggregate counter as `nvidia-smi -q -x` names it under `ecc_errors/aggregate/`, e.g.
    `sram_uncorrectable_parity`, `sram_uncorrectable_secded`, `dram_uncorrectable` (`double_bit/total` before
    driver 535)."""
    count: int = Field(ge=1, le=2**31)
    """The acknowledged reading."""
    acknowledged_on: IsoDate
    """When the owners acknowledged it (the verdict quotes it)."""
    reason: Text = Field(min_length=1)
    """Why it is acknowledged (what was checked, e.g. `dcgmi diag -r 3` passed); the verdict quotes it."""

    @field_validator("counter")
    @classmethod
    def _aggregate_only(cls, value: str) -> str:
        if value.split("/")[0] in ("volatile", "aggregate"):
            raise ValueError(f"{value!r}: name the counter under ecc_errors/aggregate/ (e.g. "
                             "sram_uncorrectable_parity); volatile counts are events since the driver loaded and "
                             "cannot be acknowledged")
        return value
ThrottleReason = Literal["sw_power_cap", "hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                         "sw_thermal_slowdown", "sync_boost"]


class GpuHealthSpec(Spec):
    """GPU health beyond presence (`hosts.gpu.health.*`), read-only: PCIe link, uncorrectable ECC, row remapping,
    Xid lines in the kernel log, thermal/power slowdown, persistence mode. A field the GPU reports as [N/A] or
    Not Supported is "not reported" (could not check), never a pass: list such checks under `not_reported`."""

    pcie_gen_min: int | None = Field(None, ge=1, le=6)
    """Floor for the current PCIe generation (5 for RTX PRO 6000); unset: the link's own maximum (max_link_gen)."""
    pcie_width_min: Literal[1, 2, 4, 8, 16, 32] | None = None
    """Floor for the current PCIe link width (16); unset: the link's own maximum (max_link_width)."""
    persistence_mode: Literal["enabled", "disabled"] | None = None
    """Judge persistence mode only where the deployment asks for it."""
    throttle_reasons: list[ThrottleReason] = ["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                                              "sw_thermal_slowdown"]
    """Clocks event reasons that fail `throttle` when active in two samples (sw_power_cap is normal under load)."""
    xid_allowed: list[Annotated[int, Field(ge=0, le=1_000_000)]] = Field([], max_length=1024)
    """Xid codes that do not fail `xid` (e.g. 13/31/43, raised by applications); empty: every Xid fails."""
    kernel_log: Literal["auto", "journal", "dmesg"] = "auto"
    """Where Xid lines are read: `journalctl -k -b`, `dmesg`, or auto (the journal, else dmesg)."""
    kernel_log_via: Name | None = None
    """Another inventory host whose kernel log holds this host's Xid lines (an LXC guest shares its node's kernel,
    whose log the guest cannot read)."""
    ecc_acknowledged: list[EccAcknowledgement] = Field([], max_length=1024)
    """Aggregate uncorrectable ECC counts the owners acknowledged, per GPU and counter (see EccAcknowledgement)."""
    not_reported: list[HealthCheck] = []
    """Checks this GPU is expected not to report (GB10: ECC, row remapping): then [N/A] passes as declared, and a
    reported value is judged as usual."""
    skip: list[HealthCheck] = []
    """Checks not to run on this host (one clean skip each, naming this list)."""

    @model_validator(mode="after")
    def _skip_and_not_reported_are_apart(self) -> GpuHealthSpec:
        if both := sorted(set(self.skip) & set(self.not_reported)):
            raise ValueError(f"checks {both} are both skipped and expected not reported; keep one")
        keys = [(a.gpu.lower(), a.counter) for a in self.ecc_acknowledged]
        if twice := sorted({f"{g} {c}" for g, c in keys if keys.count((g, c)) > 1}):
            raise ValueError(f"ecc_acknowledged: {twice} acknowledged twice; keep one count per GPU and counter")
        return self


class GpuSpec(Spec):
    """The GPUs a host must show in nvidia-smi."""

    count: int = Field(ge=0, le=1024)
    name: Label | None = None
    """Exact product name as nvidia-smi prints it."""
    compute_capability: str | None = Field(None, pattern=r"^\d+\.\d+$")
    """As `nvidia-smi --query-gpu=compute_cap` prints it: 12.0 for RTX PRO 6000, 12.1 for GB10."""
    driver_min: str | None = Field(None, pattern=r"^\d+(\.\d+)*$")
    cuda_version: str | None = Field(None, pattern=r"^\d+\.\d+$")
    """The CUDA version the driver reports (nvidia-smi header)."""
    memory: Literal["reported", "not_reported"] = "reported"
    """GB10 (unified memory) reports memory.total as [N/A]; say `not_reported` to accept that."""
    memory_total_mib_min: int | None = Field(None, ge=0, le=2**31)
    uuids: list[GpuUuid] | None = Field(None, max_length=1024)
    """Exact set of GPU UUIDs, where the split matters."""
    bus_ids: list[BusId] | None = Field(None, max_length=1024)
    """Exact set of PCI bus ids, where the split matters (nvidia-smi form, 00000000:01:00.0)."""
    p2p: Literal["supported", "unsupported"] | None = None
    """Peer-to-peer reads between every pair of GPUs (`nvidia-smi topo -p2p r`): all OK, or none OK. Declare
    what the deployment needs; where it is known broken, a [[blockers]] entry for `hosts.gpu.p2p` says so."""
    health: GpuHealthSpec | None = None
    """`[hosts.gpus.health]`: GPU health checks (`hosts.gpu.health.*`); absent: not checked."""


class GuestSplit(Spec):
    """GPUs a Proxmox guest (LXC container or VM) must own, by PCI bus id."""

    id: int = Field(ge=100, le=999_999_999)
    kind: Literal["lxc", "vm"]
    bus_ids: list[BusId] = Field(min_length=1, max_length=1024)
    """Bus ids of the GPUs passed to this guest."""
    driver: Literal["nvidia", "vfio-pci"]
    """Kernel driver the host must have bound to these GPUs (nvidia for LXC, vfio-pci for a VM)."""


class ProxmoxSpec(Spec):
    """The GPU split of a Proxmox node between its guests."""

    guests: list[GuestSplit] = Field(max_length=1024)

    @model_validator(mode="after")
    def _one_owner_per_gpu(self) -> ProxmoxSpec:
        owners: dict[str, list[str]] = {}
        for guest in self.guests:
            for bus_id in guest.bus_ids:
                owners.setdefault(bus_id.lower().removeprefix("0000"), []).append(f"{guest.kind} {guest.id}")
        if shared := {bus: who for bus, who in owners.items() if len(who) > 1}:
            raise ValueError(f"a GPU can belong to one guest only; bus ids given to several: {shared}")
        if len(ids := [g.id for g in self.guests]) != len(set(ids)):
            raise ValueError(f"guest ids repeat: {ids}")
        return self


class InterfaceSpec(Spec):
    """A network interface that must be up with an address in a subnet."""

    name: InterfaceName
    subnet: str = Field(max_length=64)
    """CIDR, e.g. 192.168.200.0/24."""
    kind: Literal["ethernet", "roce", "ib", "loopback"] = "ethernet"

    @model_validator(mode="after")
    def _subnet_is_cidr(self) -> InterfaceSpec:
        try:
            ipaddress.ip_network(self.subnet, strict=False)
        except ValueError as error:
            raise ValueError(f"subnet: {error}") from None
        return self


class EnvSpec(Spec):
    """Environment the serving process must have, read from where it is declared."""

    source: EnvSource
    """Where to read it: `systemd:<unit>`, `docker:<container>`, or `process:<pgrep -f pattern>` (the serving
    process: among the matches, the one with no matching descendant, the longest-running of those)."""
    required: dict[EnvKey, Text] = Field({}, max_length=1024)
    """Variables that must be set to exactly these values."""
    forbidden: list[EnvKey] = Field([], max_length=1024)
    """Variables that must not be set."""

    @field_validator("source")
    @classmethod
    def _source_value_fits_its_kind(cls, value: Source) -> Source:
        check_source(str(value), ("systemd", "docker", "process"))
        return value


class NcclSpec(Spec):
    """What NCCL's INFO log must prove about the transport."""

    log: NcclLogSource
    """Where the log is: `file:<path>`, `journal:<unit>`, or `docker:<container>`."""
    expect_transport: Literal["ib", "socket", "shm", "p2p"]
    """The inter-rank transport the channel lines must show (ib: `via NET/IB`, `NET/IBext[_vN]` or
    `NET/NCCL RDMA Plugin vN`, and an RDMA device in `NET/IB : Using [0]dev:1/RoCE|IB`)."""
    forbid: list[Literal["ib", "socket", "shm", "p2p"]] = []
    """Transports that must not appear."""
    p2p_disabled: bool = False
    """The log must show `NCCL_P2P_DISABLE set by environment to 1`."""

    @field_validator("log")
    @classmethod
    def _log_value_fits_its_kind(cls, value: Source) -> Source:
        check_source(str(value), ("file", "journal", "docker"), file_kind=GLOB)
        return value


class ServiceSpec(Spec):
    """A systemd unit or docker container that must (or must not) be running."""

    kind: Literal["systemd", "docker"]
    name: str
    """The unit (systemd) or container (docker) name."""
    state: Literal["running", "absent"] = "running"
    """`absent`: must not be running (e.g. the stale GLM container)."""
    enabled: bool | None = None
    """systemd only: must be enabled (starts after a reboot)."""
    image: ImageName | None = None
    """docker only: the image the container must run from."""
    why: Text = ""
    """Why this matters, quoted in the failure message."""

    @model_validator(mode="after")
    def _name_fits_kind(self) -> ServiceSpec:
        check_source(f"{self.kind}:{self.name}", ("systemd", "docker"))
        return self


class ModelFileSpec(Spec):
    """Model files that must exist, identical on every host that declares the same group."""

    path: HostPath
    """Absolute path of a file or folder (on a local host, relative to the working directory is allowed)."""
    group: Name | None = None
    """Hosts naming the same group must hold byte-identical files (size and sha256)."""
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    """Expected sha256 of a single file, when `path` is a file."""
    min_bytes: int | None = Field(None, ge=0, le=2**60)
    """Minimum total size of the files under `path`."""
    hash_timeout_s: Seconds = 3600
    """Timeout of the sha256 pass on one host (a 119 GB model takes minutes; unchanged files come from the cache)."""


class RaySpec(Spec):
    """A Ray cluster this host is the head of."""

    alive_nodes: int = Field(ge=1, le=100_000)
    gpus_per_node: float = Field(1, ge=0, le=1024)
    address: Label | None = None
    run_in: RunInSource | None = None
    """`docker:<container>` when ray lives inside a container on this host."""

    @field_validator("run_in")
    @classmethod
    def _run_in_value_fits_its_kind(cls, value: Source | None) -> Source | None:
        if value is not None:
            check_source(str(value), ("docker",))
        return value


class GpuProcessSpec(Spec):
    """Which processes may hold /dev/nvidia* on this host."""

    stack: Literal["up", "down"] = "up"
    """`down`: nothing may hold /dev/nvidia*. `up`: only the serving processes (`allowed`, `allowed_units`)."""
    allowed: list[Label] = Field([], max_length=1024)
    """Processes allowed to hold the GPUs while the stack is up, as owners see them: the process title or command
    line (`VLLM::EngineCore` as nvidia-smi and `ps -o args` show it; `python3 -m vllm.entrypoints.openai.api_server`),
    a program name (`python3`), or the comm fuser prints (15 characters). A serving process whose server is gone
    is a zombie worker (`hosts.gpu.zombie_workers`) whatever its name."""
    allowed_units: list[Label] = Field([], max_length=1024)
    """systemd units (or docker scopes) whose processes may hold the GPUs while the stack is up."""
    cleanup_hint: Text = ""
    """How to clear leftovers (quoted in the failure), e.g. the zombie-worker rule of the platform."""


class HostSpec(Spec):
    """One host: how to reach it and what must be true on it."""

    name: Name
    platform: Label
    """Name of the platform (a group of hosts serving together) this host belongs to."""
    role: Text = ""
    transport: Transport = LocalTransport()
    timeout_s: float = Field(20, gt=0, le=3600)
    """Per-command timeout; a host that hangs fails its checks after this, without blocking others."""
    wait_ready_s: float | None = Field(None, ge=0, le=86400)
    """Attach mode: how long to wait for this host to answer its transport before judging it (after a reboot).
    `--wait-ready=SECONDS` overrides it; unset: no waiting unless `--wait-ready` is given."""
    gpus: GpuSpec | None = None
    proxmox: ProxmoxSpec | None = None
    interfaces: list[InterfaceSpec] = []
    env: EnvSpec | None = None
    nccl: NcclSpec | None = None
    services: list[ServiceSpec] = []
    model_files: list[ModelFileSpec] = []
    ray: RaySpec | None = None
    gpu_processes: GpuProcessSpec | None = None
    smoke: bool = True
    """Include this host in smoke runs."""

    @model_validator(mode="after")
    def _remote_paths_are_absolute(self) -> HostSpec:
        if self.transport.kind != "local":
            relative = [m.path for m in self.model_files if not m.path.startswith("/")]
            if relative:
                raise ValueError(f"model_files paths on a {self.transport.kind} host must be absolute: {relative}")
        return self
