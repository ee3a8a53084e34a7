"""What the host contract reads from a host: the exact read-only commands, and the facts parsed from them.

Every command a host check sends is a `Command` constant below; inventory values are filled in
with `shlex.quote`, never by string pasting. `READ_ONLY` is the allow-list: `is_read_only(cmd)` is
True only for a command that one of these templates renders, which a self-test checks for every
command of a recorded run. `HostFacts` (testinfra-style) runs each command once per host and
memoizes the parsed fact, or the error, so a hung host costs one timeout, not one per check.

    >>> SMI_XML.render()
    'nvidia-smi -q -x'
    >>> LXC_CONF.render(id=129)
    'cat /etc/pve/lxc/129.conf'
    >>> is_read_only("cat /etc/pve/lxc/129.conf; rm -rf /")
    False
"""

from __future__ import annotations

import concurrent.futures
import fcntl
import functools
import json
import re
import shlex
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import CommandFailed, LlmvalError, ParseError
from .health import RESAMPLE_INTERVAL_S, KernelLog, read_dmesg, read_journal
from .inventory import HostSpec, ModelFileSpec
from .parsers.docker import ContainerInfo, parse_docker_inspect
from .parsers.env import parse_environ
from .parsers.files import parse_find_listing, parse_sha256sum
from .parsers.gpu_health import CLOCKS_QUERY_FIELDS, GpuHealth, parse_clocks_query, parse_gpu_health_xml
from .parsers.ip import Link, parse_ip_addr
from .parsers.nccl import NcclLog, parse_nccl_log
from .parsers.nvidia_smi import (
    GPU_QUERY_FIELDS,
    GpuInfo,
    SmiLog,
    parse_nvidia_smi_query,
    parse_nvidia_smi_topo_p2p,
    parse_nvidia_smi_xml,
)
from .parsers.procs import GpuHolder, parse_fuser_verbose
from .parsers.proxmox import LxcConf, PciDriver, VmConf, parse_lxc_conf, parse_pci_drivers, parse_vm_conf
from .parsers.ray import RayNode, parse_ray_nodes
from .parsers.systemd import UnitState, parse_systemctl_show
from .transport import Connection

ARG_RE = r"(?:[A-Za-z0-9_.:/@%+=,-]+|'[^']*')"
"""What one `shlex.quote`d argument looks like: a safe word, or one single-quoted string."""
GLOB_ARG_RE = r"[A-Za-z0-9_.:/@%+=,*?-]+"


@dataclass(frozen=True)
class Command:
    """A read-only command template; `{name}` is one quoted argument, `{name*}` several, `{name~}` a glob path."""

    name: str
    template: str

    def render(self, **args: Any) -> str:
        values = {}
        for _, field, _, _ in string.Formatter().parse(self.template):
            if field is None:
                continue
            key = field.rstrip("*~")
            value = args[key]
            if field.endswith("*"):
                values[field] = " ".join(shlex.quote(str(v)) for v in value)
            elif field.endswith("~"):
                if not re.fullmatch(GLOB_ARG_RE, str(value)):
                    raise ValueError(f"{self.name}: path {value!r} may only hold [A-Za-z0-9_.:/@%+=,*?-]")
                values[field] = str(value)
            else:
                values[field] = shlex.quote(str(value))
        return self.template.format_map(values)

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        parts = []
        for literal, field, _, _ in string.Formatter().parse(self.template):
            parts.append(re.escape(literal))
            if field is None:
                continue
            if field.endswith("*"):
                parts.append(f"{ARG_RE}(?: {ARG_RE})*")
            elif field.endswith("~"):
                parts.append(GLOB_ARG_RE)
            else:
                parts.append(ARG_RE)
        return re.compile("".join(parts))


UNAME = Command("uname", "uname -a")
GPU_QUERY = Command("gpu-query", f"nvidia-smi --query-gpu={','.join(GPU_QUERY_FIELDS)} --format=csv,noheader,nounits")
SMI_XML = Command("smi-xml", "nvidia-smi -q -x")
P2P_READ = Command("p2p-read", "nvidia-smi topo -p2p r")
GPU_HOLDERS = Command("gpu-holders", "fuser -v /dev/nvidia* 2>&1")
PROC_CGROUP = Command("proc-cgroup", "cat /proc/{pid}/cgroup")
PCI_DRIVERS = Command(
    "pci-drivers",
    "for d in /sys/bus/pci/devices/*; do [ \"$(cat \"$d/vendor\")\" = 0x10de ] && "
    "printf '%s %s %s\\n' \"${{d##*/}}\" \"$(cat \"$d/class\")\" \"$(readlink \"$d/driver\")\"; done; true",
)
LXC_CONF = Command("lxc-conf", "cat /etc/pve/lxc/{id}.conf")
VM_CONF = Command("vm-conf", "cat /etc/pve/qemu-server/{id}.conf")
IP_ADDR = Command("ip-addr", "ip -j addr")
UNIT_SHOW = Command("unit-show",
                    "systemctl show -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Environment {unit}")
CONTAINER_INSPECT = Command("container-inspect", "docker inspect --type container {name}")
PROCESS_ENV = Command("process-env", "tr '\\0' '\\n' < /proc/$(pgrep -o -f {pattern})/environ")
NCCL_FILE = Command("nccl-file", "grep -hE 'NCCL (INFO|WARN)' {path~}")
NCCL_JOURNAL = Command(
    "nccl-journal",
    "journalctl -o cat --no-pager _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value {unit}) "
    "| grep -E 'NCCL (INFO|WARN)'",
)
NCCL_DOCKER = Command("nccl-docker", "docker logs {name} 2>&1 | grep -E 'NCCL (INFO|WARN)'")
RAY_NODES = Command("ray-nodes", "ray list nodes --format json")
RAY_NODES_DOCKER = Command("ray-nodes-docker", "docker exec {name} ray list nodes --format json")
FILE_LIST = Command("file-list", "find -L {path} -type f -printf '%s %T@ %p\\n'")
SHA256 = Command("sha256", "sha256sum -- {paths*}")
SMI_CLOCKS = Command("smi-clocks", f"nvidia-smi --query-gpu={','.join(CLOCKS_QUERY_FIELDS)} --format=csv,noheader")
XID_JOURNAL = Command("xid-journal", "journalctl -k -b --no-pager -g 'NVRM: Xid|Linux version'")
XID_DMESG = Command("xid-dmesg", "dmesg 2>&1 | grep -E 'NVRM: Xid|Linux version|dmesg: '")

READ_ONLY: tuple[Command, ...] = (
    UNAME, GPU_QUERY, SMI_XML, P2P_READ, GPU_HOLDERS, PROC_CGROUP, PCI_DRIVERS, LXC_CONF, VM_CONF, IP_ADDR, UNIT_SHOW,
    CONTAINER_INSPECT, PROCESS_ENV, NCCL_FILE, NCCL_JOURNAL, NCCL_DOCKER, RAY_NODES, RAY_NODES_DOCKER, FILE_LIST,
    SHA256, SMI_CLOCKS, XID_JOURNAL, XID_DMESG,
)
"""Every command a smoke or nightly host check may send. Each only reads."""


TRANSIENT_HOLDERS = frozenset({"nvidia-smi"})
"""Process names that hold /dev/nvidia* only for the moment of a query."""
HOLDER_RESAMPLES = 3
HOLDER_RESAMPLE_INTERVAL_S = 0.5


def is_read_only(command: str) -> bool:
    """True when `command` is exactly one rendering of a READ_ONLY template (nothing appended, no `;`)."""
    return any(c.pattern.fullmatch(command) for c in READ_ONLY)


def _source(spec: str, kinds: tuple[str, ...]) -> tuple[str, str]:
    kind, sep, value = spec.partition(":")
    if not sep or kind not in kinds or not value:
        raise ParseError("inventory source", f"{spec!r} is not one of {[k + ':<name>' for k in kinds]}")
    return kind, value


def _not_self(pattern: str) -> str:
    """`vllm.x` as `[v]llm.x`: the same regex for pgrep, but no longer matching the shell whose own command
    line carries it (else, with no engine running, `pgrep -o -f` finds that shell and reads its environment).

    >>> _not_self("vllm.entrypoints.openai.api_server")
    '[v]llm.entrypoints.openai.api_server'
    """
    return f"[{pattern[0]}]{pattern[1:]}" if pattern[:1].isalnum() else pattern


def _memo(method: Callable) -> Callable:
    """Cache a fact, or the LlmvalError that fetching it raised, per argument tuple."""

    @functools.wraps(method)
    def wrapper(self: HostFacts, *args: Any) -> Any:
        key = (method.__name__, *args)
        if key not in self._cache:
            try:
                self._cache[key] = (True, method(self, *args))
            except LlmvalError as error:
                self._cache[key] = (False, error)
        ok, value = self._cache[key]
        if not ok:
            raise value
        return value

    return wrapper


class HostFacts:
    """Facts of one host, each fetched once (on first use) through its Connection and parsed."""

    def __init__(self, connection: Connection):
        self.connection = connection
        self.name = connection.name
        self._cache: dict[tuple, tuple[bool, Any]] = {}

    def __repr__(self) -> str:
        return f"HostFacts({self.name!r})"

    def _output(self, command: str, *, ok_rcs: tuple[int, ...] = (0,), timeout_s: float | None = None) -> str:
        result = self.connection.run(command, timeout_s=timeout_s)
        if result.rc not in ok_rcs:
            raise CommandFailed(self.name, command, f"exit code {result.rc}: {result.stderr.strip()[-400:]}")
        return result.stdout

    @_memo
    def gpus(self) -> list[GpuInfo]:
        """GPUs from nvidia-smi's CSV query."""
        return parse_nvidia_smi_query(self._output(GPU_QUERY.render()))

    @_memo
    def smi_xml(self) -> str:
        """The text of `nvidia-smi -q -x`, read once for every fact drawn from it."""
        return self._output(SMI_XML.render())

    @_memo
    def smi_log(self) -> SmiLog:
        """Driver/CUDA versions and per-GPU minor numbers from `nvidia-smi -q -x`."""
        return parse_nvidia_smi_xml(self.smi_xml())

    @_memo
    def gpu_health(self) -> list[GpuHealth]:
        """Per-GPU health fields (PCIe link, ECC, remapped rows, clocks event reasons...) of `nvidia-smi -q -x`."""
        return parse_gpu_health_xml(self.smi_xml())

    @_memo
    def gpu_health_resample(self) -> list[GpuHealth]:
        """A second sample of the clocks event reasons (CSV query), RESAMPLE_INTERVAL_S after asking."""
        time.sleep(RESAMPLE_INTERVAL_S)  # sampling interval, not a readiness wait
        return parse_clocks_query(self._output(SMI_CLOCKS.render()))

    @_memo
    def kernel_log(self, kind: str) -> list[KernelLog]:
        """Xid lines of the kernel log since boot from `journal`, `dmesg` or `auto` (the journal, else dmesg);
        each source tried says what it found or why it could not be read."""
        logs: list[KernelLog] = []
        if kind in ("auto", "journal"):
            result = self.connection.run(XID_JOURNAL.render())
            logs.append(read_journal(result.rc, result.stdout, result.stderr, result.command))
            if kind == "journal" or not logs[-1].problem:
                return logs
        result = self.connection.run(XID_DMESG.render())
        logs.append(read_dmesg(result.rc, result.stdout, result.stderr, result.command))
        return logs

    @_memo
    def p2p_read(self) -> dict[tuple[str, str], str]:
        """Peer-to-peer read status between every pair of GPUs, as the driver reports it."""
        return parse_nvidia_smi_topo_p2p(self._output(P2P_READ.render()))

    @_memo
    def gpu_holders(self) -> list[GpuHolder]:
        """Processes holding /dev/nvidia* (fuser exits 1 when there are none), without passers-by.

        A short-lived `nvidia-smi` (our own query from another xdist worker, a monitoring agent) holds the
        devices for a moment: seen on the real H200 host. While such a holder shows, the listing is taken
        again (bounded) and only holders present in every sample are kept; a stray worker stays."""
        holders = parse_fuser_verbose(self._output(GPU_HOLDERS.render(), ok_rcs=(0, 1)))
        for _ in range(HOLDER_RESAMPLES):
            if not any(h.command in TRANSIENT_HOLDERS for h in holders):
                break
            time.sleep(HOLDER_RESAMPLE_INTERVAL_S)  # sampling interval, not a readiness wait
            again = {h.pid for h in parse_fuser_verbose(self._output(GPU_HOLDERS.render(), ok_rcs=(0, 1)))}
            holders = [h for h in holders if h.pid in again]
        return holders

    @_memo
    def cgroup(self, pid: int) -> str:
        """The process's cgroup v2 line (`0::/system.slice/x.service`); empty when it is gone."""
        lines = self.connection.run(PROC_CGROUP.render(pid=pid)).stdout.splitlines()
        return next((line for line in lines if line.startswith("0::")), lines[0] if lines else "")

    @_memo
    def pci_drivers(self) -> dict[str, PciDriver]:
        return parse_pci_drivers(self._output(PCI_DRIVERS.render()))

    @_memo
    def lxc_conf(self, vmid: int) -> LxcConf:
        return parse_lxc_conf(self._output(LXC_CONF.render(id=vmid)))

    @_memo
    def vm_conf(self, vmid: int) -> VmConf:
        return parse_vm_conf(self._output(VM_CONF.render(id=vmid)))

    @_memo
    def links(self) -> dict[str, Link]:
        return parse_ip_addr(self._output(IP_ADDR.render()))

    @_memo
    def unit(self, name: str) -> UnitState:
        return parse_systemctl_show(self._output(UNIT_SHOW.render(unit=name)))

    @_memo
    def container(self, name: str) -> ContainerInfo | None:
        """The container, or None when docker has no container of that name."""
        result = self.connection.run(CONTAINER_INSPECT.render(name=name))
        if result.rc != 0:
            if "no such" in (result.stderr + result.stdout).lower():
                return None
            raise CommandFailed(self.name, result.command, f"exit code {result.rc}: {result.stderr.strip()[-400:]}")
        return parse_docker_inspect(result.stdout)

    @_memo
    def environment(self, source: str) -> dict[str, str] | None:
        """The serving process's environment from `systemd:<unit>`, `docker:<name>` or `process:<pattern>`;
        None when the unit, container or process does not exist."""
        kind, value = _source(source, ("systemd", "docker", "process"))
        if kind == "systemd":
            unit = self.unit(value)
            return unit.environment if unit.exists else None
        if kind == "docker":
            container = self.container(value)
            return None if container is None else container.env
        result = self.connection.run(PROCESS_ENV.render(pattern=_not_self(value)))
        return parse_environ(result.stdout) if result.rc == 0 and result.stdout.strip() else None

    @_memo
    def nccl_log(self, source: str) -> NcclLog:
        """NCCL INFO/WARN lines from `file:<path>`, `journal:<unit>` (current invocation) or `docker:<name>`."""
        kind, value = _source(source, ("file", "journal", "docker"))
        command = {"file": lambda: NCCL_FILE.render(path=value), "journal": lambda: NCCL_JOURNAL.render(unit=value),
                   "docker": lambda: NCCL_DOCKER.render(name=value)}[kind]()
        return parse_nccl_log(self._output(command, ok_rcs=(0, 1)))

    @_memo
    def ray_nodes(self, run_in: str | None) -> list[RayNode]:
        if run_in is None:
            return parse_ray_nodes(self._output(RAY_NODES.render()))
        _, name = _source(run_in, ("docker",))
        return parse_ray_nodes(self._output(RAY_NODES_DOCKER.render(name=name)))

    @_memo
    def file_listing(self, path: str) -> dict[str, tuple[int, str]]:
        """Files under `path` (following symlinks): path → (size, mtime); empty when `path` is missing."""
        return parse_find_listing(self.connection.run(FILE_LIST.render(path=path)).stdout)


# ---- model-file identity: sizes and sha256 on every node in parallel, with a cache -------------------------

@dataclass(frozen=True, order=True)
class FileDigest:
    relpath: str
    size: int
    sha256: str | None


class HashCache:
    """sha256 sums by (host, path, size, mtime) in a JSON file under reports/, so an unchanged 119 GB model
    is not re-hashed every night. The file lives with the controller, never on a host (checks stay read-only)."""

    def __init__(self, path: Path | None):
        self.path = path

    def _locked(self, update: Callable[[dict], None] | None = None) -> dict:
        if self.path is None:
            return {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                data = json.loads(self.path.read_text()) if self.path.exists() else {}
            except json.JSONDecodeError:
                data = {}
            if update is not None:
                update(data)
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
                tmp.replace(self.path)
            return data

    @staticmethod
    def key(host: str, path: str, size: int, mtime: str) -> str:
        return f"{host}|{path}|{size}|{mtime}"

    def get(self) -> dict:
        return self._locked()

    def put(self, entries: dict[str, str]) -> None:
        if entries:
            self._locked(lambda data: data.update(entries))


def model_digests(facts: HostFacts, spec: ModelFileSpec, cache: HashCache, *, with_hashes: bool) -> list[FileDigest]:
    """Size (and sha256, when asked) of every file under `spec.path`; hashes come from the cache when the
    file's size and mtime are unchanged, else from one bounded `sha256sum` on the host."""
    listing = facts.file_listing(spec.path)
    root = spec.path.rstrip("/") + "/"
    relative = {path: (path[len(root):] if path.startswith(root) else path) for path in listing}
    if not with_hashes:
        return sorted(FileDigest(relative[p], size, None) for p, (size, _) in listing.items())
    known = cache.get()
    digests: dict[str, str] = {}
    todo = []
    for path, (size, mtime) in listing.items():
        cached = known.get(HashCache.key(facts.name, path, size, mtime))
        if cached:
            digests[path] = cached
        else:
            todo.append(path)
    if todo:
        command = SHA256.render(paths=sorted(todo))
        result = facts.connection.run(command, timeout_s=spec.hash_timeout_s)
        if result.rc != 0:
            raise CommandFailed(facts.name, command, f"exit code {result.rc}: {result.stderr.strip()[-400:]}")
        fresh = parse_sha256sum(result.stdout)
        digests.update(fresh)
        cache.put({HashCache.key(facts.name, p, *listing[p]): sha for p, sha in fresh.items() if p in listing})
    return sorted(FileDigest(relative[p], listing[p][0], digests.get(p)) for p in listing)


def group_digests(members: list[tuple[HostSpec, HostFacts, ModelFileSpec]], cache: HashCache, *,
                  with_hashes: bool) -> dict[str, list[FileDigest] | LlmvalError]:
    """Digests of every member host, computed on all hosts at once (one thread per host)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(members))) as pool:
        futures = {host.name: pool.submit(model_digests, facts, spec, cache, with_hashes=with_hashes)
                   for host, facts, spec in members}
    out: dict[str, list[FileDigest] | LlmvalError] = {}
    for name, future in futures.items():
        try:
            out[name] = future.result()
        except LlmvalError as error:
            out[name] = error
    return out


def digest_differences(reference: list[FileDigest], other: list[FileDigest]) -> list[str]:
    """Human-readable differences between two listings (missing, extra, size, sha256), sorted."""
    ref = {d.relpath: d for d in reference}
    oth = {d.relpath: d for d in other}
    out = [f"missing {p}" for p in sorted(ref.keys() - oth.keys())]
    out += [f"extra {p}" for p in sorted(oth.keys() - ref.keys())]
    for p in sorted(ref.keys() & oth.keys()):
        a, b = ref[p], oth[p]
        if a.size != b.size:
            out.append(f"{p}: size {b.size} != {a.size}")
        elif a.sha256 != b.sha256:
            out.append(f"{p}: sha256 {(b.sha256 or '?')[:12]}… != {(a.sha256 or '?')[:12]}…")
    return out


def peer_facts(get: Callable[[str], Any], names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """`get(name)` for each peer: (values of the peers that answered, reasons of those that did not).

    Cross-host checks compare with the peers that answered; an unreachable peer fails its own checks."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name in names:
        try:
            values[name] = get(name)
        except LlmvalError as error:
            errors[name] = str(error).splitlines()[0]
    return values, errors


def holder_is_allowed(holder: GpuHolder, facts: HostFacts, allowed: list[str], allowed_units: list[str]) -> bool:
    """A GPU holder is a serving process: its name is allowed, or its cgroup is one of the allowed units."""
    if holder.command in allowed:
        return True
    if not allowed_units:
        return False
    unit = GpuHolder(holder.pid, holder.command, facts.cgroup(holder.pid)).unit
    return unit in allowed_units


@dataclass(frozen=True)
class GroupVerdict:
    subject: str
    """The differing hosts (comma-joined), or the reference host when all agree."""
    reference: str
    files: int
    differences: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return not self.differences


def compare_group(members: list[tuple[HostSpec, HostFacts, ModelFileSpec]], cache: HashCache, *,
                  with_hashes: bool) -> GroupVerdict:
    """Listings of all members at once; the reference is the listing most hosts share (ties: inventory order).
    A member that cannot be read raises its LlmvalError (the group cannot be judged)."""
    listings = group_digests(members, cache, with_hashes=with_hashes)
    for value in listings.values():
        if isinstance(value, LlmvalError):
            raise value
    readable: dict[str, list[FileDigest]] = {n: v for n, v in listings.items() if not isinstance(v, LlmvalError)}
    values = list(readable.values())
    counts = [values.count(v) for v in values]
    reference = list(readable)[counts.index(max(counts))]
    diffs = {n: digest_differences(readable[reference], v) for n, v in readable.items()}
    odd = {n: d[:5] + ([f"... {len(d) - 5} more"] if len(d) > 5 else []) for n, d in diffs.items() if d}
    return GroupVerdict(",".join(odd) or reference, reference, len(readable[reference]), odd)


def fact_plan(spec: HostSpec) -> list[tuple[str, tuple]]:
    """The facts (method, arguments) the host contract will read from `spec`, from what it declares."""
    plan: list[tuple[str, tuple]] = []
    if spec.gpus is not None:
        plan.append(("gpus", ()))
        if spec.gpus.cuda_version is not None:
            plan.append(("smi_log", ()))
        if spec.gpus.health is not None:
            plan.append(("gpu_health", ()))
            if spec.gpus.health.kernel_log_via is None and "xid" not in spec.gpus.health.skip:
                plan.append(("kernel_log", (spec.gpus.health.kernel_log,)))
    if spec.proxmox is not None:
        plan += [("pci_drivers", ()), ("smi_log", ())]
        plan += [("lxc_conf" if g.kind == "lxc" else "vm_conf", (g.id,)) for g in spec.proxmox.guests]
    if spec.gpu_processes is not None:
        plan.append(("gpu_holders", ()))
    if spec.interfaces:
        plan.append(("links", ()))
    if spec.env is not None:
        plan.append(("environment", (spec.env.source,)))
    if spec.nccl is not None:
        plan.append(("nccl_log", (spec.nccl.log,)))
    for service in spec.services:
        plan.append(("unit" if service.kind == "systemd" else "container", (service.name,)))
    if spec.ray is not None:
        plan.append(("ray_nodes", (spec.ray.run_in,)))
    plan += [("file_listing", (m.path,)) for m in spec.model_files]
    return list(dict.fromkeys(plan))


def prefetch(hosts: list[tuple[HostSpec, HostFacts]]) -> None:
    """Read every planned fact of every host at once (one thread per host, each host's facts in order).

    Each fact is memoized (value or LlmvalError), so the tests then only compare. A hung host holds its
    own thread for at most its commands' timeouts; the others finish meanwhile."""

    def one(spec: HostSpec, facts: HostFacts) -> None:
        for method, args in fact_plan(spec):
            try:
                getattr(facts, method)(*args)
            except Exception:  # memoized LlmvalErrors re-raise in the test that reads the fact
                pass

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(32, len(hosts)))) as pool:
        for future in [pool.submit(one, spec, facts) for spec, facts in hosts]:
            future.result()
