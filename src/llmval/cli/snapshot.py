"""`llmval snapshot`: read a deployment through the contract's own host facts and engine probes, and write
what it observed as an inventory (goss `autoadd` for GPU hosts and LLM engines).

The given inventory says where to look (hosts, transports, endpoints, units) and is the contract: a snapshot
never rewrites a declared rule. It writes a reading where the seed marked a guess (`# placeholder`) or declared
nothing; a declared value the deployment agrees with stays as declared (a minimum that holds keeps its number,
`confirmed` with the reading); a declared value the deployment contradicts stays too, and the reading is written
as a comment beside it (`observed "fp8": contradicts the contract`), never in its place (writing it
turned `kv_cache_dtype = "bfloat16"` into the FP8 fault, and the faulty deployment's smoke GREEN). The diff lists
every key it read (key, declared -> observed, where it was read) and the placeholders nothing read could answer.
Only declared read-only commands are sent (`llmval.hostfacts`) and only the GET probes of the engine adapters
(`llmval.engines`), live, or answered from `--replay` recordings.

    >>> placeholder_paths('[[hosts]]\\nname = "a"\\n[hosts.gpus]\\ncount = 4  # placeholder: guess\\n')
    [('hosts', 0, 'gpus', 'count')]
"""

from __future__ import annotations

import copy
import ipaddress
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.errors import CommandFailed, LlmvalError
from ..core.files import read_regular_text
from ..engines import adapter_for, detect_engine, launch_log_of
from ..hostfacts import HostFacts, log_command
from ..inventory import MAX_INVENTORY_BYTES, EndpointSpec, HostSpec, Inventory, Source, load_inventory
from ..io.http import endpoint_client
from ..io.recording import Replay
from ..io.transport import connect

Path_ = tuple[str | int, ...]

PLACEHOLDER_RE = re.compile(r"#.*\bplaceholder\b", re.I)
_HEADER_RE = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY_RE = re.compile(r'^\s*("?[A-Za-z0-9_.-]+"?)\s*=\s*(.*)$')


@dataclass(frozen=True)
class Observation:
    """One inventory key's observed value, and where it was read."""

    path: Path_
    value: Any
    source: str


@dataclass
class Snapshot:
    """What a snapshot saw: observations, the keys it could not read (and why), the written inventory."""

    declared: dict
    observations: list[Observation] = field(default_factory=list)
    unread: dict[str, str] = field(default_factory=dict)
    """What it tried to read and could not: `kpro6-ct129 gpus` -> the reason (first line)."""
    serving_units: dict[str, list[str]] = field(default_factory=dict)
    """Per host, the systemd units whose processes hold /dev/nvidia* (the serving unit's real name)."""

    def observe(self, path: Path_, value: Any, source: str) -> None:
        if value is not None:
            self.observations.append(Observation(path, value, source))

    def inventory(self, changes: list[Change]) -> dict:
        """The declared inventory with the readings of `changes` that are `WRITTEN` in (a missing table is created);
        every declared rule as declared."""
        out = copy.deepcopy(self.declared)
        for change in changes:
            if change.kind not in WRITTEN:
                continue
            node: Any = out
            for key in change.at[:-1]:
                node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
            node[change.at[-1]] = change.observed
        return out


# ---- where the seed says "placeholder" -----------------------------------------------------------------

def placeholder_paths(text: str) -> list[Path_]:
    """Inventory keys whose line (or, inside a multi-line array, any line) carries `# placeholder`."""
    counts: dict[Path_, int] = {}
    aot: set[tuple[str, ...]] = set()
    table: Path_ = ()
    open_key: str | None = None
    in_string = False
    found: list[Path_] = []
    for line in text.splitlines():
        if in_string:
            in_string = line.count('"""') % 2 == 0
            continue
        if open_key is not None:
            if PLACEHOLDER_RE.search(line):
                found.append((*table, open_key))
            if line.strip().startswith("]"):
                open_key = None
            continue
        header = _HEADER_RE.match(line)
        if header and not _KEY_RE.match(line):
            names = tuple(part.strip().strip('"') for part in header.group(2).split("."))
            resolved: list[str | int] = []
            for depth in range(len(names)):
                resolved.append(names[depth])
                prefix = names[: depth + 1]
                if header.group(1) == "[[" and depth == len(names) - 1:
                    aot.add(prefix)
                    key = tuple(resolved)
                    counts[key] = counts.get(key, 0) + 1
                    resolved.append(counts[key] - 1)
                elif prefix in aot:
                    resolved.append(counts[tuple(resolved)] - 1)
            table = tuple(resolved)
            continue
        match = _KEY_RE.match(line)
        if match is None:
            continue
        key = match.group(1).strip('"')
        if PLACEHOLDER_RE.search(line):
            found.append((*table, key))
        rest = match.group(2)
        if rest.count('"""') % 2 == 1:
            in_string = True
        elif rest.lstrip().startswith("[") and _bracket_depth(rest) > 0:
            open_key = key
    return list(dict.fromkeys(found))


def _bracket_depth(text: str) -> int:
    code = re.sub(r'"[^"]*"', '""', text).split("#", 1)[0]  # strings and the comment hold no brackets
    return code.count("[") - code.count("]")


def show(path: Path_, data: dict) -> str:
    """`hosts[kpro6-ct129].gpus.bus_ids`: array-of-table entries by their name (or endpoint) where they have one."""
    out, node = "", data
    for key in path:
        if isinstance(key, int):
            item = node[key] if isinstance(node, list) and key < len(node) else {}
            label = item.get("name") or item.get("id") or item.get("endpoint") if isinstance(item, dict) else None
            out += f"[{label if label is not None else key}]"
            node = item
        else:
            out += ("." if out else "") + key
            node = node.get(key, {}) if isinstance(node, dict) else {}
    return out


def _get(data: Any, path: Path_) -> Any:
    for key in path:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return None
    return data


# ---- reading -------------------------------------------------------------------------------------------

def _try(snap: Snapshot, what: str, read: Callable[[], Any]) -> Any:
    try:
        return read()
    except (LlmvalError, OSError) as error:
        snap.unread[what] = (str(error).strip().splitlines() or [type(error).__name__])[0][:240]
        return None


def _same(values: list) -> Any:
    return values[0] if values and all(v == values[0] for v in values) else None


def observe_host(snap: Snapshot, index: int, spec: HostSpec, facts: HostFacts,
                 node_facts: Callable[[str], HostFacts]) -> None:
    """GPUs (always tried), and the declared proxmox split, GPU holders' units, env, NCCL, services."""
    at: Path_ = ("hosts", index)
    gpus = _try(snap, f"{spec.name} gpus", facts.gpus) if spec.gpus is not None or spec.proxmox is None else None
    if gpus:
        src = f"{spec.name}: nvidia-smi --query-gpu"
        snap.observe((*at, "gpus", "count"), len(gpus), src)
        snap.observe((*at, "gpus", "name"), _same([g.name for g in gpus]), src)
        snap.observe((*at, "gpus", "compute_capability"), _same([g.compute_cap for g in gpus]), src)
        snap.observe((*at, "gpus", "driver_min"), _same([g.driver_version for g in gpus]), src)
        memory = [g.memory_total_mib for g in gpus]
        if None not in memory:
            snap.observe((*at, "gpus", "memory_total_mib_min"), min(memory), src)
        snap.observe((*at, "gpus", "uuids"), [g.uuid for g in gpus], src)
        snap.observe((*at, "gpus", "bus_ids"), [g.bus_id for g in gpus], src)
    if spec.proxmox is not None:
        _observe_split(snap, at, spec, facts)
    if spec.gpu_processes is not None:
        holders = _try(snap, f"{spec.name} gpu holders", facts.gpu_holders) or []
        units = sorted({u for h in holders if (u := _unit_of(snap, spec, facts, h.pid)) is not None})
        if units and spec.gpu_processes.allowed_units:
            snap.observe((*at, "gpu_processes", "allowed_units"), units, f"{spec.name}: fuser + /proc/<pid>/cgroup")
        snap.serving_units[spec.name] = units
    unit = _only(snap.serving_units.get(spec.name, []))
    if spec.env is not None:
        source = spec.env.source
        if source.kind == "systemd" and unit is not None:
            snap.observe((*at, "env", "source"), f"systemd:{unit}", f"{spec.name}: the GPU holders' unit")
            source = Source(kind="systemd", value=unit)
        env = _try(snap, f"{spec.name} env ({source.kind}:{source.value})", lambda: facts.environment(source))
        if env is not None:
            snap.observe((*at, "env", "source"), f"{source.kind}:{source.value}", f"{spec.name}: {env.read_from}")
            seen = {k: env.get(k) for k in spec.env.required}
            if all(v is not None for v in seen.values()):
                snap.observe((*at, "env", "required"), seen, f"{spec.name}: {env.read_from}")
            for key, value in seen.items():
                if value is None:
                    snap.unread[f"{spec.name} env {key}"] = f"not set in the serving process ({env.read_from})"
    if spec.nccl is not None:
        log_source = spec.nccl.log
        if log_source.kind == "journal" and unit is not None:
            snap.observe((*at, "nccl", "log"), f"journal:{unit}", f"{spec.name}: the GPU holders' unit")
            log_source = Source(kind="journal", value=unit)
        log = _try(snap, f"{spec.name} nccl log", lambda: facts.nccl_log(log_source))
        if log is not None and log.transports:
            transports = sorted(log.transports)
            src = f"{spec.name}: NCCL INFO channel lines ({log.lines} lines)"
            if len(transports) == 1:
                snap.observe((*at, "nccl", "expect_transport"), transports[0], src)
            if spec.nccl.p2p_disabled:  # declared (the default False is not a claim)
                snap.observe((*at, "nccl", "p2p_disabled"), log.env.get("NCCL_P2P_DISABLE") == "1", src)
    for i, service in enumerate(spec.services):
        path = (*at, "services", i)
        if service.kind == "systemd":
            name = unit if (unit is not None and len(spec.services) == 1) else service.name
            state = _try(snap, f"{spec.name} unit {name}", lambda n=name: facts.unit(n))
            if state is not None and state.exists:
                snap.observe((*path, "name"), name, f"{spec.name}: systemctl show")
                snap.observe((*path, "enabled"), state.is_enabled, f"{spec.name}: systemctl show {name}")
                snap.observe((*path, "state"), "running" if state.is_active else None, f"{spec.name}: systemctl show")
        else:
            info = _try(snap, f"{spec.name} container {service.name}", lambda s=service: facts.container(s.name))
            if info is None and f"{spec.name} container {service.name}" not in snap.unread:
                snap.observe((*path, "state"), "absent", f"{spec.name}: docker inspect {service.name} (none)")
            if info is not None:
                snap.observe((*path, "name"), service.name, f"{spec.name}: docker inspect {service.name}")
            if info is not None and service.state == "running":
                snap.observe((*path, "image"), info.image, f"{spec.name}: docker inspect {service.name}")
                snap.observe((*path, "state"), "running" if info.is_running else None, f"{spec.name}: docker inspect")
    _observe_files(snap, at, spec, facts)
    _observe_network(snap, at, spec, facts)


def _observe_network(snap: Snapshot, at: Path_, spec: HostSpec, facts: HostFacts) -> None:
    """Each declared interface's subnet (the declared one while an address lies in it), and Ray's alive nodes."""
    links = _try(snap, f"{spec.name} interfaces", facts.links) if spec.interfaces else None
    for i, interface in enumerate(spec.interfaces if links is not None else []):
        link = links.get(interface.name)  # type: ignore[union-attr]
        if link is None or not link.is_up:
            snap.unread[f"{spec.name} interface {interface.name}"] = "absent" if link is None else link.operstate
            continue
        subnet = interface.subnet if link.addresses_in(interface.subnet) else next(
            (str(ipaddress.ip_interface(a).network) for a in link.addresses if ipaddress.ip_interface(a).version == 4),
            None)
        snap.observe((*at, "interfaces", i, "subnet"), subnet, f"{spec.name}: ip -j addr ({', '.join(link.addresses)})")
    if spec.ray is not None:
        nodes = _try(snap, f"{spec.name} ray nodes", lambda: facts.ray_nodes(spec.ray.run_in))  # type: ignore[union-attr]
        if nodes:
            alive = [n for n in nodes if n.is_alive and n.gpus >= spec.ray.gpus_per_node]  # type: ignore[union-attr]
            src = f"{spec.name}: ray list nodes ({len(nodes)} nodes)"
            snap.observe((*at, "ray", "alive_nodes"), len(alive), src)
            if spec.ray.run_in is not None:
                snap.observe((*at, "ray", "run_in"), f"{spec.ray.run_in.kind}:{spec.ray.run_in.value}", src)


def _only(values: list) -> Any:
    return values[0] if len(values) == 1 else None


def _unit_of(snap: Snapshot, spec: HostSpec, facts: HostFacts, pid: int) -> str | None:
    from ..parsers.procs import GpuHolder

    line = _try(snap, f"{spec.name} cgroup of pid {pid}", lambda: facts.cgroup(pid))
    return GpuHolder(pid, "", line or "").unit


def _observe_split(snap: Snapshot, at: Path_, spec: HostSpec, facts: HostFacts) -> None:
    drivers = _try(snap, f"{spec.name} pci drivers", facts.pci_drivers) or {}
    log = _try(snap, f"{spec.name} nvidia-smi -q -x", facts.smi_log)
    by_minor = {g.minor_number: g.bus_id for g in (log.gpus if log else ())}
    for i, guest in enumerate(spec.proxmox.guests):  # type: ignore[union-attr]
        path = (*at, "proxmox", "guests", i)
        if guest.kind == "lxc":
            conf = _try(snap, f"{spec.name} lxc {guest.id}", lambda g=guest: facts.lxc_conf(g.id))
            if conf is None or not log:
                continue
            minors = sorted(int(m) for d in conf.gpu_devices if (m := re.sub(r"\D", "", d)))
            bus_ids = [by_minor[m] for m in minors if m in by_minor]
            src = f"{spec.name}: /etc/pve/lxc/{guest.id}.conf + nvidia-smi minor numbers"
        else:
            conf = _try(snap, f"{spec.name} vm {guest.id}", lambda g=guest: facts.vm_conf(g.id))
            if conf is None:
                continue
            bus_ids = sorted(conf.bus_ids)
            src = f"{spec.name}: /etc/pve/qemu-server/{guest.id}.conf hostpci"
        if bus_ids:
            snap.observe((*path, "bus_ids"), bus_ids, src)
            bound = _same([d.driver for b in bus_ids if (d := drivers.get(b)) is not None])
            snap.observe((*path, "driver"), bound, f"{spec.name}: /sys/bus/pci/devices/*/driver")


def _observe_files(snap: Snapshot, at: Path_, spec: HostSpec, facts: HostFacts) -> None:
    for i, model_file in enumerate(spec.model_files):
        listing = _try(snap, f"{spec.name} model files {model_file.path}",
                       lambda m=model_file: facts.file_listing(m.path))
        if listing:
            snap.observe((*at, "model_files", i, "path"), model_file.path, f"{spec.name}: find {model_file.path}")
        if listing:  # the contract's rule: the files under the path hold at least min_bytes together
            snap.observe((*at, "model_files", i, "min_bytes"), sum(size for size, _ in listing.values()),
                         f"{spec.name}: find {model_file.path} ({len(listing)} files)")


def observe_endpoint(snap: Snapshot, index: int, spec: EndpointSpec, client, read_log) -> None:
    """The served model, its context length, the engine and its flags, through the adapter's probes."""
    at: Path_ = ("endpoints", index)
    unit = _only(snap.serving_units.get(spec.host or "", []))
    if spec.logs and spec.logs.startswith("journal:") and unit is not None:
        snap.observe((*at, "logs"), f"journal:{unit}", f"{spec.host}: the GPU holders' unit")
    adapter = adapter_for(spec, client, read_log=read_log)
    cards = _try(snap, f"{spec.name} /v1/models", lambda: adapter.model_cards)
    if not cards:
        return
    card = next((c for c in cards if c.get("id") == spec.model), cards[0] if len(cards) == 1 else None)
    if card is None:
        snap.unread[f"{spec.name} model"] = f"/v1/models lists {sorted(str(c.get('id')) for c in cards)}"
        return
    snap.observe((*at, "model"), card.get("id"), f"{spec.name}: GET /v1/models")
    snap.observe((*at, "max_model_len"), card.get("max_model_len"), f"{spec.name}: GET /v1/models max_model_len")
    engine = _try(snap, f"{spec.name} engine", lambda: detect_engine(adapter))
    if engine is not None:
        snap.observe((*at, "engine"), engine.value, f"{spec.name}: {engine.source}")
    expect = (*at, "expect")
    for key, read in (("attention_backend", adapter.attention_backend), ("tool_call_parser", adapter.tool_call_parser),
                      ("reasoning_parser", adapter.reasoning_parser),
                      ("tensor_parallel_size", adapter.tensor_parallel_size), ("nodes", adapter.nodes),
                      ("dtype", adapter.model_dtype)):
        found = _try(snap, f"{spec.name} {key}", read)
        if found is not None and found.value not in (None, "auto"):  # "auto" says nothing about the flag
            value = int(found.value) if key in {"tensor_parallel_size", "nodes"} else _dtype(key, found.value)
            snap.observe((*expect, key), value, f"{spec.name}: {found.source}")
    evidence = _try(snap, f"{spec.name} kv_cache_dtype", adapter.kv_cache_evidence) or []
    kv = _same([e.resolved for e in evidence if e.resolved])
    if kv is not None:
        snap.observe((*expect, "kv_cache_dtype"), kv, f"{spec.name}: {', '.join(e.source for e in evidence)}")
    spec_facts = _try(snap, f"{spec.name} speculative", adapter.speculative) or {}
    if spec_facts.get("algorithm") is not None and spec_facts["algorithm"].value:
        for key, found in spec_facts.items():
            if found.value is not None:
                snap.observe((*expect, "speculative", key), found.value, f"{spec.name}: {found.source}")


def _dtype(key: str, value: Any) -> Any:
    if key == "dtype":
        from ..engines import normalize_dtype

        return normalize_dtype(str(value)) or value
    return value


def take(inventory_path: Path, replays: list[Path] | None = None) -> tuple[Inventory, Snapshot]:
    """Read every host and endpoint `inventory_path` names, live or from `replays` (merged, in order)."""
    inventory = load_inventory(inventory_path)
    snap = Snapshot(tomllib.loads(read_regular_text(inventory_path, MAX_INVENTORY_BYTES)))  # load_inventory read it
    replay = Replay(*replays) if replays else None  # merged; two that disagree are a RecordingError
    connections: dict[str, HostFacts] = {}

    def facts_of(name: str) -> HostFacts:
        if name not in connections:
            spec = next(h for h in inventory.hosts if h.name == name)
            connections[name] = HostFacts(connect(spec, inventory=inventory, replay=replay))
        return connections[name]

    for index, spec in enumerate(inventory.hosts):
        facts = _try(snap, f"{spec.name} connection", lambda s=spec: facts_of(s.name))
        if facts is not None:
            observe_host(snap, index, spec, facts, facts_of)
    for index, spec in enumerate(inventory.endpoints):
        client = endpoint_client(spec, replay=replay, timeout_s=min(spec.request_timeout_s, 30))
        observe_endpoint(snap, index, spec, client, _log_reader(spec, inventory, facts_of))
    return inventory, snap


def _log_reader(spec: EndpointSpec, inventory: Inventory,
                facts_of: Callable[[str], HostFacts]) -> Callable[[], str] | None:
    """The engine log as the contract reads it; `launch`: the log `--launch` keeps under ./reports/launch/."""
    if not spec.logs or not spec.host:
        return None
    launch_path = launch_log_of(inventory, Path("reports")) if spec.logs == "launch" else None
    if spec.logs == "launch" and launch_path is None:
        return None
    command = log_command(spec.logs, launch_path=launch_path)

    def read() -> str:
        result = facts_of(spec.host).connection.run(command)  # type: ignore[arg-type]
        if result.rc not in (0, 1):
            raise CommandFailed(spec.host or "", command, result.failure)
        return result.stdout

    return read


# ---- the diff ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Change:
    kind: str
    """`filled` (a placeholder answered), `differs` (declared, observed otherwise), `added` (not declared),
    `unanswered` (a placeholder nothing read could answer)."""
    path: str
    declared: Any = None
    observed: Any = None
    source: str = ""
    at: Path_ = ()
    """The key as a path into the inventory (`path` is it as shown)."""

    @property
    def rewrites(self) -> bool:
        """Whether `--out` holds another value here than the declared one."""
        return self.kind in WRITTEN and self.observed != self.declared


WRITTEN = ("filled", "added")
"""The kinds of change whose reading `--out` writes as the value: a placeholder's guess, or a key not declared.
`confirmed` and `differs` keep the declared value (`differs` with the reading as a comment beside it)."""


def diff(snap: Snapshot, placeholders: list[Path_]) -> list[Change]:
    """One change per key read (`confirmed`, `differs`, `filled`, `added`: what `--out` does with each is `WRITTEN`'s)
    and per placeholder nothing read answered (`unanswered`)."""
    changes: list[Change] = []
    answered: set[Path_] = set()
    first_at: dict[Path_, int] = {}
    for obs in snap.observations:
        declared = _get(snap.declared, obs.path)
        owner = next((p for p in placeholders if obs.path[: len(p)] == p), None)
        if owner is not None:
            answered.add(owner)
        if obs.path in first_at and changes[first_at[obs.path]].observed == obs.value:  # one key, one line
            earlier = changes[first_at[obs.path]]  # read alike in two places (the GPU holders' unit, the unit)
            changes[first_at[obs.path]] = replace(earlier, source=f"{earlier.source}; {obs.source}")
            continue
        first_at.setdefault(obs.path, len(changes))
        if _agrees(obs.path, declared, obs.value) and owner is None:
            kind = "confirmed"
        else:
            kind = "filled" if owner is not None else ("added" if declared is None else "differs")
        changes.append(Change(kind, show(obs.path, snap.declared), declared, obs.value, obs.source, obs.path))
    for path in placeholders:
        if path not in answered:
            changes.append(Change("unanswered", show(path, snap.declared), _get(snap.declared, path), at=path))
    return changes


def _agrees(path: Path_, declared: Any, observed: Any) -> bool:
    if declared == observed:
        return True
    if isinstance(path[-1], str) and (path[-1].endswith("_min") or path[-1].startswith("min_")) \
            and declared is not None:  # a floor: anything at or above it agrees
        try:
            return _version(observed) >= _version(declared)
        except (TypeError, ValueError):
            return False
    if isinstance(declared, list) and isinstance(observed, list):
        return sorted(map(str, declared)) == sorted(map(str, observed))
    if isinstance(declared, str) and isinstance(observed, str):  # an image without a tag means :latest
        return declared.lower().removesuffix(":latest") == observed.lower().removesuffix(":latest")
    return False


def _version(value: Any) -> tuple:
    return tuple(int(p) for p in str(value).split(".")) if isinstance(value, str) else (value,)


def render_diff(changes: list[Change]) -> str:
    """One line per key read (declared -> observed, and what `--out` does with it, where it was read) and per
    placeholder nothing answered; a declared value confirmed as written is counted, not listed."""
    labels = {"filled": "placeholder filled", "differs": "DIFFERS", "added": "added", "unanswered": "not answered",
              "confirmed": "confirmed"}
    lines = []
    for kind in ("differs", "filled", "added", "confirmed", "unanswered"):
        for c in (c for c in changes if c.kind == kind):
            if kind == "unanswered":
                lines.append(f"  {labels[kind]:<18} {c.path} (declared {c.declared!r}; nothing read answers it)")
            elif kind == "differs":
                lines.append(f"  {labels[kind]:<18} {c.path}: declared {c.declared!r}, observed {c.observed!r}: "
                             "contradicts the contract; kept as declared (--out writes the reading as a comment "
                             f"beside it)  [{c.source}]")
            elif kind == "confirmed":
                if c.observed != c.declared:  # a minimum that holds, a list in another order: the rule stays
                    lines.append(f"  {labels[kind]:<18} {c.path}: {c.declared!r} kept as declared (read "
                                 f"{c.observed!r})  [{c.source}]")
            else:
                # a placeholder the reading leaves as it is: only its comment changes (`(confirmed)` on a value that
                # changes, a floor the reading passes, read as "kept" beside a count of values written from readings)
                same = " (confirmed: the value stays)" if kind == "filled" and not c.rewrites else ""
                old = "(not declared)" if kind == "added" else repr(c.declared)
                lines.append(f"  {labels[kind]:<18} {c.path}: {old} -> {c.observed!r}{same}  [{c.source}]")
    counts = {k: sum(c.kind == k for c in changes) for k in labels}
    head = ", ".join(f"{n} {labels[k]}" for k, n in counts.items())
    return "\n".join([f"snapshot: {head}", *lines])


def write_toml(data: dict, header: str, source_text: str | None = None,
               sources: dict[Path_, str] | None = None, contradicted: list[Change] | None = None) -> str:
    """The inventory as TOML after a comment header saying where it came from. Given the declared inventory's
    text, its document is kept (tomlkit: comments, key order, layout) and only the values that differ are
    replaced or added; a filled value whose line said `# placeholder` says instead where it was observed
    (`sources`: key path -> source), and each `contradicted` rule keeps its value with the reading as a comment
    beside it (after any comment of its own)."""
    import tomlkit

    comments = "".join(f"# {line}\n" for line in header.splitlines())
    if source_text is None:
        return comments + tomlkit.dumps(data)
    document = tomlkit.parse(source_text)
    _merge(document, data, (), sources or {})
    for change in contradicted or []:
        _annotate(document, change.at, f"observed by llmval snapshot: {_toml_value(change.observed)} contradicts "
                                       f"the contract ({change.source})", change.path)
    return comments + tomlkit.dumps(document)


def _toml_value(value: Any) -> str:
    """`value` as TOML writes it (`"fp8"`, `12`, `["a", "b"]`), for a comment."""
    import tomlkit

    try:
        return tomlkit.item(value).as_string()
    except (TypeError, ValueError):
        return repr(value)


def _annotate(document: Any, at: Path_, text: str, shown: str) -> None:
    """`text` as the comment of the item at `at` (after its own comment); where that item keeps no comment of its
    own (a key inside an inline table), on the nearest enclosing one that does, naming the key."""
    node, items = document, []
    for key in at:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            break
        items.append(node)
    for depth, item in enumerate(reversed(items)):
        trivia = getattr(item, "trivia", None)
        if trivia is None:
            continue
        said = text if depth == 0 else f"{shown}: {text}"
        trivia.comment = f"{trivia.comment}  # {said}" if trivia.comment else f"# {said}"
        trivia.comment_ws = trivia.comment_ws or "  "
        return


def _merge(node: Any, data: dict, at: Path_, sources: dict[Path_, str]) -> None:
    """Write `data` into the tomlkit container `node`, touching only what differs."""
    from collections.abc import Mapping

    for key, value in data.items():
        here = (*at, key)
        old = node.get(key)
        if isinstance(old, Mapping) and isinstance(value, dict):
            _merge(old, value, here, sources)
        elif isinstance(old, list) and isinstance(value, list) and len(old) == len(value) \
                and all(isinstance(o, Mapping) and isinstance(v, dict) for o, v in zip(old, value, strict=True)):
            for index, (o, v) in enumerate(zip(old, value, strict=True)):
                _merge(o, v, (*here, index), sources)
        else:
            trivia = getattr(old, "trivia", None)
            was_placeholder = trivia is not None and PLACEHOLDER_RE.search(trivia.comment or "")
            if old is None or (old.unwrap() if hasattr(old, "unwrap") else old) != value:
                node[key] = value
            if was_placeholder and here in sources:  # filled or confirmed: no longer a guess
                node[key].comment(f"observed by llmval snapshot: {sources[here]}")
