"""Who holds the GPUs: serving processes, strays, and zombie workers whose server is gone.

Names as owners write them (issue 21.1). `fuser -v /dev/nvidia*` prints the kernel's 15-character `comm`
(`VLLM::EngineCor`); owners write the process title that `nvidia-smi` and `ps -o args` show
(`VLLM::EngineCore`), a program name (`python3`) or a full command line. `match_name` tries, in order: the
comm itself, the command line / process title (whole, argv[0], argv[0]'s basename, a leading part of it),
and last, only where the command line is unknown, a 15-character comm that is the start of an allowed name
(the kernel's cut). It says which name matched and how.

Zombie workers (issue 21.2). A serving process (allowed by name or by unit) that holds the GPUs is attached
when it, or one of its ancestors, holds a socket on a port of an endpoint the inventory declares on this
host. One that is not is a zombie: its server is gone (killed with `kill -9`, crashed), it still holds the
GPU memory, and the next start fails or OOMs. A name alone never makes a holder allowed.

Ray workers (issue 36). With `--distributed-executor-backend ray` the GPU is held by a Ray actor process
(`ray::RayWorkerProc.run`), a child of its node's raylet, never of the API server. Its server is still there when
the actor's driver (the job that owns it: vLLM's engine core) is attached to a declared port as above; a worker
whose driver lost its server (`kill -9` of the API server orphans the engine core, which keeps the actor alive)
is a zombie, named with its actor, job and driver. Ray's own process titles `ray::<Class>.<method>` match an
allowed `ray::<Class>` (the title changes with every method the actor runs).

    >>> match_name("VLLM::EngineCor", "VLLM::EngineCore", ["VLLM::EngineCore"]).how
    'its process title `VLLM::EngineCore` (fuser prints the 15-character comm `VLLM::EngineCor`)'
    >>> match_name("VLLM::EngineCor", None, ["VLLM::EngineCore"]).how
    "its comm `VLLM::EngineCor`, the kernel's 15-character cut of `VLLM::EngineCore`"
    >>> match_name("python3", "/usr/bin/python3 -m vllm.entrypoints.openai.api_server", ["sglang"]) is None
    True
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..parsers.procs import COMM_LEN, ComputeApp, GpuHolder, ProcessRow


@dataclass(frozen=True)
class NameMatch:
    """Which allowed name a holder matched, and how (quoted in the verdict)."""

    allowed: str
    how: str


RAY_TITLE = "ray::"
"""Ray titles its worker processes `ray::<Class>` and, while an actor runs a method, `ray::<Class>.<method>`."""


def match_name(comm: str, args: str | None, allowed: list[str]) -> NameMatch | None:
    """The allowed name `comm` (fuser's COMMAND) or `args` (the full command line / process title) matches."""
    for name in allowed:
        if comm == name:
            return NameMatch(name, f"its comm `{comm}`")
    if args:
        argv0 = args.split(" ", 1)[0]
        note = f" (fuser prints the 15-character comm `{comm}`)" if comm != args and len(comm) == COMM_LEN else ""
        for name in allowed:
            if args == name or argv0 == name:
                what = "process title" if args == argv0 else "command line"
                return NameMatch(name, f"its {what} `{args if args == name else argv0}`{note}")
            if os.path.basename(argv0) == name:
                return NameMatch(name, f"its program `{argv0}`")
            if " " in name and (args + " ").startswith(name + " "):
                return NameMatch(name, f"its command line `{args[:120]}`")
            if name.startswith(RAY_TITLE) and argv0.startswith(name + "."):
                return NameMatch(name, f"its Ray process title `{argv0}` (actor `{name}` running "
                                       f"`{argv0[len(name) + 1:]}`)")
        return None
    for name in allowed:
        if len(comm) == COMM_LEN and name.startswith(comm) and len(name) > COMM_LEN:
            return NameMatch(name, f"its comm `{comm}`, the kernel's 15-character cut of `{name}`")
    return None


def human_age(seconds: int) -> str:
    """`133` -> `2 min 13 s`; `11000` -> `3 h 3 min`; `200000` -> `2 d 7 h`."""
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"


def gib(mib: int) -> str:
    return f"{mib / 1024:.1f} GiB"


@dataclass(frozen=True)
class Holder:
    """One process holding /dev/nvidia*, with what the host says about it."""

    pid: int
    comm: str
    """fuser's COMMAND (the kernel's comm, at most 15 characters)."""
    row: ProcessRow | None = None
    """Its `ps` row (parent, age, command line); None when it exited between the reads."""
    unit: str | None = None
    allowed_as: NameMatch | None = None
    apps: tuple[ComputeApp, ...] = ()
    """Its nvidia-smi compute-app rows (GPU memory per GPU)."""

    @property
    def name(self) -> str:
        """The full name: the process title / argv[0] where known, else the comm."""
        if self.row and self.row.args:
            return self.row.argv0 if len(self.row.args) > 60 else self.row.args
        return self.comm

    @property
    def is_serving(self) -> bool:
        return self.allowed_as is not None or self.unit is not None

    def memory(self) -> str:
        """`holds 44.2 GiB on GPU-5f1c...` or why it is not known."""
        known = [a for a in self.apps if a.used_mib is not None]
        if not self.apps:
            return "GPU memory: nvidia-smi lists no compute app with this pid"
        if not known:
            return f"GPU memory: not reported by nvidia-smi ({self.apps[0].gpu_uuid})"
        total = sum(a.used_mib for a in known)  # type: ignore[misc]
        gpus = ", ".join(dict.fromkeys(a.gpu_uuid for a in known))
        return f"holds {gib(total)} ({total} MiB) on {gpus}"

    def why_allowed(self) -> str:
        if self.allowed_as is not None:
            return f"allowed as `{self.allowed_as.allowed}`: {self.allowed_as.how}"
        return f"in allowed unit {self.unit}"


@dataclass(frozen=True)
class StrayServer:
    """A serving holder whose own process tree serves a port no endpoint declares: a second, undeclared server
    (its server is there, so it is no zombie), not the deployment the inventory describes."""

    holder: Holder
    port: int
    server_pid: int
    """The process of the holder's tree (itself or an ancestor) that holds the port's socket."""
    server_args: str = ""
    basis: str = ""
    """How the server was tied to its port when the port's owner was not read (its own `--port`), else ""."""


@dataclass
class Judgement:
    """The holders sorted out: attached serving processes, zombies (with why), strays, undeclared servers."""

    attached: list[tuple[Holder, str]] = field(default_factory=list)
    zombies: list[tuple[Holder, str]] = field(default_factory=list)
    strays: list[Holder] = field(default_factory=list)
    servers: list[StrayServer] = field(default_factory=list)
    """Serving holders of a server on a port no endpoint declares (issue 31.1): strays, named by port."""
    unjudged: list[tuple[Holder, str]] = field(default_factory=list)
    """Serving holders whose attachment cannot be told (no endpoint declared on this host)."""
    ports: str = ""
    """What the declared ports showed, for people (`port 8000: nothing listens`)."""
    missing: str = ""
    """The reads a recording did not hold (made before them), judged without: said in the verdict."""
    partial: bool = False
    """Judged from fuser, nvidia-smi and the server's pgrep alone (`judge_partial`): no parent chains."""

    def zombie_text(self) -> list[str]:
        """Each zombie: pid, name, its GPU memory, age and why its server is gone (the long name match last, and the
        largest GPU memory first, so a shortened verdict keeps what matters: with Ray the memory is the actor's,
        not its orphaned driver's)."""
        ranked = sorted(self.zombies, key=lambda z: -sum(a.used_mib or 0 for a in z[0].apps))
        return [f"pid {h.pid} {h.name}, {h.memory()}, {'up ' + human_age(h.row.age_s) if h.row else 'age not read'}, "
                f"{why} ({h.why_allowed()})" for h, why in ranked]

    def server_text(self) -> list[str]:
        """Each undeclared server once: its port, its server process, its GPU holders and the memory they hold.

        `a server on port 8001 that no endpoint declares: pid 2188 python3 -m vllm.entrypoints.openai.api_server
        (with pid 2205 VLLM::EngineCore) holds 28.9 GiB (29580 MiB) on GPU-...`"""
        out = []
        for (port, server), members in _grouped(self.servers).items():
            apps = [a for m in members for a in m.holder.apps if a.used_mib is not None]
            total = sum(a.used_mib for a in apps)  # type: ignore[misc]
            memory = (f"holds {gib(total)} ({total} MiB) on {', '.join(dict.fromkeys(a.gpu_uuid for a in apps))}"
                      if apps else "GPU memory not reported by nvidia-smi")
            head = next((m for m in members if m.holder.pid == server), None)
            name = _short_args(members[0].server_args) or (head.holder.name if head else "?")
            others = [f"pid {m.holder.pid} {m.holder.name}" for m in members if m.holder.pid != server]
            also = f" (with {', '.join(others)})" if others else ""
            holds = "" if head else " (it holds no GPU itself)"
            basis = next((m.basis for m in members if m.basis), "")
            out.append(f"a server on port {port} that no endpoint declares: pid {server} {name}{holds}{also} "
                       f"{memory}" + (f" ({basis})" if basis else ""))
        return out


@dataclass(frozen=True)
class RayOwner:
    """What Ray says of a GPU holder that runs under a raylet: its actor, the job owning it, and that job's driver
    (pid and node address as `ray list jobs` gives them). `unknown` says why no driver could be told."""

    actor: str = ""
    job_id: str = ""
    job_status: str = ""
    driver_pid: int | None = None
    driver_ip: str = ""
    worker_ip: str = ""
    unknown: str = ""

    def text(self) -> str:
        job = f"job {self.job_id} {self.job_status}".rstrip() if self.job_id else "no job"
        return f"Ray actor {self.actor} of {job}" if self.actor else "a Ray worker process"


def _grouped(servers: list[StrayServer]) -> dict[tuple[int, int], list[StrayServer]]:
    groups: dict[tuple[int, int], list[StrayServer]] = {}
    for server in servers:
        groups.setdefault((server.port, server.server_pid), []).append(server)
    return groups


def _short_args(args: str) -> str:
    """A command line to its program and first words (`python3 -m vllm.entrypoints.openai.api_server`)."""
    words = args.split()
    return " ".join(words[:3]) if len(words) > 2 and words[1] == "-m" else " ".join(words[:1])


def describe_holders(gpu_holders: list[GpuHolder], rows: dict[int, ProcessRow], apps: list[ComputeApp],
                     allowed: list[str], units: dict[int, str | None], allowed_units: list[str]) -> list[Holder]:
    """Each fuser holder with its ps row, allowed name (how it matched), allowed unit and GPU memory."""
    out = []
    for h in gpu_holders:
        row = rows.get(h.pid)
        unit = units.get(h.pid)
        out.append(Holder(h.pid, h.command, row, unit if unit in allowed_units else None,
                          match_name(h.command, row.args if row else None, allowed),
                          tuple(a for a in apps if a.pid == h.pid)))
    return out


def judge(holders: list[Holder], rows: dict[int, ProcessRow], ports: list[int], listening: dict[int, list[int]],
          port_pids: dict[int, list[int]], other_servers: dict[int, int] | None = None,
          ray_owners: dict[int, RayOwner] | None = None, bases: dict[int, str] | None = None) -> Judgement:
    """Sort the holders: strays (not serving), and each serving one attached (itself or an ancestor holds a
    declared port's socket; for a Ray worker, its driver's tree: `ray_owners`, holder pid -> RayOwner), a server
    of its own (itself or an ancestor, for a Ray worker its driver's tree too, holds the socket of a port no
    endpoint declares: `other_servers`, pid -> port) or a zombie (why: port closed, parent gone, parent serves no
    declared port, a Ray worker whose driver has no server)."""
    result = Judgement()
    other_servers = other_servers or {}
    ray_owners = ray_owners or {}
    closed = [p for p in ports if p not in listening]
    servers = {pid: port for port in ports for pid in port_pids.get(port, [])}
    result.ports = "; ".join(
        f"port {p}: nothing listens" if p in closed else
        f"port {p}: served by pid {', '.join(str(x) for x in port_pids.get(p, []))}" if port_pids.get(p) else
        f"port {p}: listening, but its process is not visible to this user" for p in ports)
    for holder in holders:
        if not holder.is_serving:
            result.strays.append(holder)
            continue
        if not ports:
            result.unjudged.append((holder, "no endpoint is declared on this host, so no serving port to check"))
            continue
        chain, pid, seen = [], holder.pid, set()
        while pid in rows and pid not in seen:
            seen.add(pid)
            if pid in servers:
                chain.append(pid)
                break
            pid = rows[pid].ppid
        if chain:
            server = chain[0]
            how = "it serves" if server == holder.pid else f"its ancestor pid {server} ({_short(rows, server)}) serves"
            result.attached.append((holder, f"{how} port {servers[server]}"))
            continue
        owner = ray_owners.get(holder.pid)
        driver_tree = _driver_tree(owner, rows)
        if any(pid in servers for pid in driver_tree):
            driver_tree = []  # attached through its driver (_judge_ray_worker), whatever else that tree serves
        tree = _chain(holder.pid, rows) + driver_tree
        own = next((pid for pid in tree if pid in other_servers), None)
        if own is not None:
            result.servers.append(StrayServer(holder, other_servers[own], own, rows[own].args if own in rows else "",
                                              (bases or {}).get(own, "")))
            continue
        hidden = [p for p in ports if p not in closed and not port_pids.get(p)]
        if hidden:  # a Ray worker too: its driver may be under the server that holds the port unseen
            result.unjudged.append((holder, f"port {hidden[0]} listens but fuser cannot see its process "
                                            "(run the host checks as root or as the serving user)"))
            continue
        if owner is not None:
            _judge_ray_worker(result, holder, owner, rows, servers, ports, closed)
            continue
        result.zombies.append((holder, _why_orphan(holder, rows, ports, closed)))
    return result


def _driver_tree(owner: RayOwner | None, rows: dict[int, ProcessRow]) -> list[int]:
    """A Ray worker's driver and its ancestors, where its server is (none when Ray could not tell the driver, or
    the driver runs on another node: its pid is not this host's)."""
    if owner is None or owner.unknown or owner.driver_pid is None:
        return []
    if owner.driver_ip and owner.worker_ip and owner.driver_ip != owner.worker_ip:
        return []
    return _chain(owner.driver_pid, rows)


def _judge_ray_worker(result: Judgement, holder: Holder, owner: RayOwner, rows: dict[int, ProcessRow],
                      servers: dict[int, int], ports: list[int], closed: list[int]) -> None:
    """A GPU holder under a raylet: attached through its driver's tree, a zombie when that driver has no server
    (or Ray lists no live driver for its job), unjudged when Ray could not be asked or the driver runs on
    another node (judged where the endpoint is)."""
    what = owner.text()
    if owner.unknown:
        result.unjudged.append((holder, f"{what}: {owner.unknown}"))
        return
    if owner.driver_pid is None:
        result.zombies.append((holder, f"{what}: Ray lists no driver for its job (the engine that owned it is "
                                       "gone)"))
        return
    if owner.driver_ip and owner.worker_ip and owner.driver_ip != owner.worker_ip:
        result.unjudged.append((holder, f"{what}: its driver pid {owner.driver_pid} runs on node {owner.driver_ip}, "
                                        f"not this one ({owner.worker_ip}): judged on the host of its endpoint"))
        return
    driver = owner.driver_pid
    server = next((pid for pid in _chain(driver, rows) if pid in servers), None)
    name = _short(rows, driver) if driver in rows else "?"
    if server is not None:
        how = "serves" if server == driver else f"is under pid {server} ({_short(rows, server)}), which serves"
        result.attached.append((holder, f"{what}: its driver pid {driver} ({name}) {how} port {servers[server]}"))
        return
    if driver not in rows:
        why = f"its driver pid {driver} is gone (job {owner.job_status or 'status unknown'})"
    elif rows[driver].ppid <= 1:
        why = f"its driver pid {driver} ({name}) has lost its parent (PPID 1)"
    else:
        why = f"its driver pid {driver} ({name}) serves no declared port"
    result.zombies.append((holder, ", ".join([f"{what}: {why}", *_ports_state(ports, closed)])))


RAYLET = "raylet"
"""The program every Ray worker process is a child of (one per node)."""


def raylet_of(pid: int, rows: dict[int, ProcessRow]) -> int | None:
    """The raylet among `pid`'s ancestors (by program name), or None: the process is not a Ray worker."""
    for ancestor in _chain(pid, rows)[1:]:
        if os.path.basename(rows[ancestor].argv0) == RAYLET:
            return ancestor
    return None


def ray_owners(facts, holders: list[Holder], rows: dict[int, ProcessRow], run_in) -> dict[int, RayOwner]:
    """For each serving holder under a raylet: its actor, job and driver, from `ray list actors`, `ray list jobs`
    and `ray list nodes` (the node of the actor, to tell a driver on another node). A read that fails makes every
    such holder `unknown` with the error (never a zombie on a guess)."""
    from ..core.errors import LlmvalError, ReplayMiss

    workers = [h for h in holders if h.is_serving and raylet_of(h.pid, rows) is not None]
    if not workers:
        return {}
    try:
        actors = {a.pid: a for a in facts.ray_actors(run_in) if a.state == "ALIVE"}
        jobs = {j.job_id: j for j in facts.ray_jobs(run_in)}
        nodes = {n.node_id: n.ip for n in facts.ray_nodes(run_in)}
    except ReplayMiss:
        raise
    except LlmvalError as error:
        return {h.pid: RayOwner(unknown=f"Ray could not be asked who owns it ({str(error).splitlines()[0][:200]})")
                for h in workers}
    owners = {}
    for holder in workers:
        actor = actors.get(holder.pid)
        if actor is None:
            owners[holder.pid] = RayOwner(unknown="`ray list actors` lists no ALIVE actor with its pid")
            continue
        job = jobs.get(actor.job_id)
        owners[holder.pid] = RayOwner(f"{actor.class_name}{' ' + actor.name if actor.name else ''}", actor.job_id,
                                      job.status if job else "not listed", job.driver_pid if job else None,
                                      job.driver_ip if job else "", nodes.get(actor.node_id, ""))
    return owners


def _chain(pid: int, rows: dict[int, ProcessRow]) -> list[int]:
    """`pid` and its ancestors as far as `rows` knows them (bounded by what was read; stops at pid 1)."""
    chain, seen = [], set()
    while pid in rows and pid not in seen and pid > 1:
        seen.add(pid)
        chain.append(pid)
        pid = rows[pid].ppid
    return chain


PORT_ARG_RE = re.compile(r"(?:^|\s)--port(?:=|\s+)(?P<port>\d{1,5})(?=\s|$)")
"""`--port 8001` / `--port=8001` in a command line (vLLM's and SGLang's server flag)."""


def named_ports(args: str) -> list[int]:
    """The ports a command line names with `--port`.

    >>> named_ports("python3 -m vllm.entrypoints.openai.api_server --model /m --port 8001 --host 127.0.0.1")
    [8001]
    """
    return [int(m["port"]) for m in PORT_ARG_RE.finditer(args) if 0 < int(m["port"]) < 65536]


def other_server_ports(holders: list[Holder], rows: dict[int, ProcessRow], ports: list[int],
                       listening: dict[int, list[int]], default_ports: list[int]) -> dict[int, list[int]]:
    """Ports to ask the owner of, for serving holders that no declared port attaches: each port their process tree
    names with `--port` (else the engines' default ports) that listens and no endpoint declares -> the pids of the
    tree that may hold it. An engine's own inner sockets (torch's TCPStore, ZMQ) are never asked about: only a
    port the server was told to serve on, or an engine's default one."""
    wanted: dict[int, list[int]] = {}
    for holder in holders:
        if not holder.is_serving:
            continue
        chain = _chain(holder.pid, rows)
        if any(pid in rows and named_ports(rows[pid].args) and set(named_ports(rows[pid].args)) & set(ports)
               for pid in chain):
            continue  # told to serve a declared port: attached, or a zombie of it
        named = [p for pid in chain if pid in rows for p in named_ports(rows[pid].args)]
        for port in named or default_ports:
            if port in listening and port not in ports:
                wanted.setdefault(port, [])
                wanted[port] += [pid for pid in chain if pid not in wanted[port]]
    return wanted


def _short(rows: dict[int, ProcessRow], pid: int) -> str:
    args = rows[pid].args if pid in rows else "?"
    return args if len(args) <= 80 else args[:77] + "..."


def _why_orphan(holder: Holder, rows: dict[int, ProcessRow], ports: list[int], closed: list[int]) -> str:
    parts = []
    row = holder.row
    if row is None:
        parts.append("exited while it was read")
    elif row.ppid <= 1:
        parts.append("its parent is gone (PPID 1)")
    else:
        parts.append(f"its parent pid {row.ppid} ({_short(rows, row.ppid)}) serves no declared port")
    return ", ".join([*parts, *_ports_state(ports, closed)])


def _ports_state(ports: list[int], closed: list[int]) -> list[str]:
    """Why no declared port attaches a zombie: each port closed, or served by another process tree."""
    return [f"port {p}: nothing listens" if p in closed else f"port {p} is served by another process tree"
            for p in ports]


def endpoint_ports(inventory, host_name: str) -> list[int]:
    """Ports of the endpoints the inventory declares on `host_name` (their `host`), from their base_url."""
    ports = []
    for endpoint in inventory.endpoints:
        if endpoint.host == host_name:
            ports.append(endpoint.port)
    return list(dict.fromkeys(ports))


MAX_LINEAGE_ROUNDS = 8
"""How many generations `lineage` reads up from the GPU holders (worker -> engine core -> API server -> ...)."""


def lineage(host, pids: list[int]) -> dict[int, ProcessRow]:
    """Rows of `pids` and of their ancestors, read through the host's `processes` fact (`llmval.hostfacts.processes`;
    bounded: `MAX_LINEAGE_ROUNDS` generations; stops at pid 1)."""
    known: dict[int, ProcessRow] = {}
    wanted = tuple(sorted(set(pids)))
    for _ in range(MAX_LINEAGE_ROUNDS):
        if not wanted:
            break
        rows = host.processes(wanted)
        known.update(rows)
        wanted = tuple(sorted({r.ppid for r in rows.values() if r.ppid > 1} - known.keys() - set(wanted)))
    return known


def read_judgement(facts, rule, ports: list[int], default_ports: tuple[int, ...] | list[int] = (),
                   ray_run_in=None, server_pattern: str | None = None) -> tuple[Judgement, list[Holder], str]:
    """Read what the judgement needs through the declared host facts (`llmval.hostfacts.processes`) and judge.
    `default_ports`: the ports the engines serve on unless told otherwise (a second server started without
    `--port`). `ray_run_in`: where this host's `ray` CLI runs (`[hosts.ray] run_in`), for GPU holders under a
    raylet. `server_pattern`: the inventory's `pgrep -f` pattern of the serving process (`hosts.env.source =
    "process:..."`), asked only where a recording holds no parent chains.

    Returns the judgement, every holder, and a note on what could not be read (GPU memory). A recording made
    before the process reads is judged from what it holds (`judge_partial`: fuser, `nvidia-smi -q -x`, the
    server's pgrep) and the judgement says what was missing; one without even fuser raises ReplayMiss."""
    from ..core.errors import LlmvalError, ReplayMiss

    gpu_holders = facts.gpu_holders()
    missing: list[str] = []
    rows: dict[int, ProcessRow] | None
    try:
        rows = lineage(facts, [h.pid for h in gpu_holders]) if gpu_holders else {}
    except ReplayMiss:
        rows = None
        missing.append("the holders' parents and ages (ps)")
    note = ""
    try:
        apps = facts.gpu_apps() if gpu_holders else []
    except ReplayMiss:
        apps = _apps_from_xml(facts)
        missing.append("--query-compute-apps" + (" (GPU memory from nvidia-smi -q -x instead)" if apps else ""))
    except LlmvalError as error:
        apps, note = [], f"GPU memory per process not read: {str(error).splitlines()[0]}"
    try:
        units = {h.pid: GpuHolder(h.pid, h.command, facts.cgroup(h.pid)).unit for h in gpu_holders} \
            if rule.allowed_units else {}
    except ReplayMiss:
        units = {}
        missing.append("the holders' cgroups (their units)")
    holders = describe_holders(gpu_holders, rows or {}, apps, list(rule.allowed), units, list(rule.allowed_units))
    listening: dict[int, list[int]] | None
    try:
        listening = facts.listening_ports() if ports and any(h.is_serving for h in holders) else {}
    except ReplayMiss:
        listening = None
        missing.append("the listening ports (/proc/net/tcp)")
    if rows is None or listening is None:
        servers = None
        if server_pattern:
            try:
                servers = facts.process_matches(server_pattern)
            except ReplayMiss:
                missing.append(f"the server's pgrep ({server_pattern!r})")
        return judge_partial(holders, ports, servers, server_pattern, missing), holders, note
    port_pids = {p: facts.port_pids(p) for p in ports if p in listening}
    ray_workers = ray_owners(facts, holders, rows, ray_run_in) if ports else {}
    drivers = [o.driver_pid for o in ray_workers.values() if o.driver_pid is not None and o.driver_pid not in rows]
    if drivers:
        rows = {**rows, **lineage(facts, drivers)}
    first = judge(holders, rows, ports, listening, port_pids, ray_owners=ray_workers)
    others: dict[int, int] = {}
    bases: dict[int, str] = {}
    if first.zombies:  # before calling one a zombie: does its own tree serve a port no endpoint declares?
        for port, tree in other_server_ports([h for h, _ in first.zombies], rows, ports, listening,
                                             list(default_ports)).items():
            try:
                owners = facts.port_pids(port)
            except ReplayMiss:  # a recording made before this read: the tree's own `--port` of a listening port
                owners = [pid for pid in tree if pid in rows and port in named_ports(rows[pid].args)]
                bases.update({pid: f"its owner was not read (no `fuser {port}/tcp` in the recording): its own "
                                   f"command line says --port {port}, and port {port} listens" for pid in owners})
            others.update({pid: port for pid in tree if pid in owners})
    judged = judge(holders, rows, ports, listening, port_pids, others, ray_workers, bases) if others else first
    judged.missing = "; ".join(missing)
    return judged, holders, note


def _apps_from_xml(facts) -> list[ComputeApp]:
    """GPU memory per process from `nvidia-smi -q -x`'s `<process_info>` (what a recording made before
    `--query-compute-apps` holds); [] when that is not recorded either."""
    from ..core.errors import LlmvalError

    try:
        log = facts.smi_log()
    except LlmvalError:
        return []
    return [ComputeApp(pid, mib, gpu.uuid, name) for gpu in log.gpus for pid, mib, name in gpu.process_memory]


def judge_partial(holders: list[Holder], ports: list[int], servers: list | None, pattern: str | None,
                  missing: list[str]) -> Judgement:
    """The holders judged without their parent chains or the listening ports (a recording made before those
    reads): a holder that is itself the serving process (`pgrep -f <pattern>`) is attached; a serving holder is a
    zombie when that pgrep finds no server at all (its server is gone, whoever its parent was); with a server
    running, or no pattern to ask, whether a holder belongs to it cannot be told (unjudged, saying why)."""
    result = Judgement(missing="; ".join(missing), partial=True)
    server_pids = {s.pid for s in servers or []}
    found = ", ".join(f"pid {s.pid} {s.name}" for s in servers or [])
    asked = f"`pgrep -f '{pattern}'`"
    if servers is not None:
        result.ports = f"{asked} finds {found or 'no process'}"
    else:
        result.ports = "no server process looked for" + ("" if pattern else " (the inventory names no "
                                                               "`hosts.env.source = \"process:<pgrep -f pattern>\"`)")
    for holder in holders:
        if holder.pid in server_pids:
            result.attached.append((holder, f"it is the serving process {asked} finds"))
        elif not holder.is_serving:
            result.strays.append(holder)
        elif not ports:
            result.unjudged.append((holder, "no endpoint is declared on this host, so no serving port to check"))
        elif servers is None:
            result.unjudged.append((holder, f"not read: {result.missing}; and no server process was looked for"))
        elif not servers:
            result.zombies.append((holder, f"no server process runs: {asked} finds none (port "
                                           f"{', '.join(map(str, ports))}: its server is gone)"))
        else:
            result.unjudged.append((holder, f"a server runs ({found}), but whether this holder is its child was not "
                                            f"read ({result.missing})"))
    return result
