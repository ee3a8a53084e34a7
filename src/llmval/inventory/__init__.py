"""The inventory: one TOML file that is the whole contract of a deployment.

`load_inventory(path)` reads and validates it; any problem becomes one `InventoryError` naming the
file, the key path and the reason. Sections: `[deployment]`, `[[hosts]]`, `[[endpoints]]`,
`[[perf]]`, `[[niah]]`, `[[agentic]]`, `[launch]`, `[[decisions]]`, `[[blockers]]`, `[[hints]]`.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from pydantic import Field, ValidationError, ValidationInfo, model_validator

from ..core.errors import InventoryError
from ..core.files import read_regular
from ._base import JudgedBy, Scaled, Spec, judged_by, scaled
from ._checks import raw_problems
from ._engines import engine_kinds, speculative_algorithm_problem, use_engine_registry
from ._where import loc_of, meant_key, with_line
from .accuracy import AgenticSpec, NiahSpec
from .hosts import (
    DockerTransport,
    EccAcknowledgement,
    EnvSpec,
    GpuHealthSpec,
    GpuProcessSpec,
    GpuSpec,
    GuestSplit,
    HostSpec,
    InterfaceSpec,
    LocalTransport,
    ModelFileSpec,
    NcclSpec,
    PctTransport,
    ProxmoxSpec,
    RaySpec,
    ServiceSpec,
    Source,
    SshTransport,
)
from .launch import WATCH_RE, LaunchSpec, ReadinessSpec, StepSpec, WaitSpec
from .perf import AgenticLoadSpec, MachineScale, PerfSpec
from .report import BlockerSpec, DecisionSpec, DeploymentSpec, HintSpec
from .serving import EndpointSpec, ServingExpect, SpeculativeSpec, ToolCallGates

MAX_INVENTORY_BYTES = 16 * 2**20
"""The largest inventory read (a 64-host fleet's is under 100 kB)."""

__all__ = [
    "MAX_INVENTORY_BYTES",
    "AgenticLoadSpec",
    "AgenticSpec",
    "BlockerSpec",
    "DecisionSpec",
    "DeploymentSpec",
    "DockerTransport",
    "EccAcknowledgement",
    "EndpointSpec",
    "EnvSpec",
    "GpuHealthSpec",
    "GpuProcessSpec",
    "GpuSpec",
    "GuestSplit",
    "HintSpec",
    "HostSpec",
    "InterfaceSpec",
    "Inventory",
    "JudgedBy",
    "LaunchSpec",
    "LocalTransport",
    "MachineScale",
    "ModelFileSpec",
    "NcclSpec",
    "NiahSpec",
    "PctTransport",
    "PerfSpec",
    "ProxmoxSpec",
    "RaySpec",
    "ReadinessSpec",
    "Scaled",
    "ServiceSpec",
    "ServingExpect",
    "Source",
    "SpeculativeSpec",
    "SshTransport",
    "StepSpec",
    "ToolCallGates",
    "WaitSpec",
    "engine_kinds",
    "inventory_json_schema",
    "judged_by",
    "load_inventory",
    "scaled",
    "use_engine_registry",
]


def _dups(items: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(index, value) of every repeat after the first."""
    seen: set[str] = set()
    repeats = []
    for index, value in items:
        if value in seen:
            repeats.append((index, value))
        seen.add(value)
    return repeats


def reference_problems(inv: Inventory) -> list[tuple[str, str]]:
    """Names that must be unique are, and every name that refers to a host, endpoint or decision resolves."""
    hosts = {h.name: h for h in inv.hosts}
    endpoints = [e.name for e in inv.endpoints]
    decisions = [d.id for d in inv.decisions]
    problems: list[tuple[str, str]] = []

    def where(section: str, index: int, name: str, field: str) -> str:
        return f"{section}[{index}:{name}].{field}" if name else f"{section}[{index}].{field}"

    for section, names in (("hosts", [h.name for h in inv.hosts]), ("endpoints", endpoints),
                           ("decisions", decisions), ("blockers", [b.id for b in inv.blockers])):
        field = "id" if section in {"decisions", "blockers"} else "name"
        for index, name in _dups(list(enumerate(names))):
            problems.append((where(section, index, name, field), f"duplicate {field} {name!r}"))
    for index, host in enumerate(inv.hosts):
        health = host.gpus.health if host.gpus is not None else None
        log_via = getattr(health, "kernel_log_via", None)
        if log_via is not None and (log_via not in hosts or log_via == host.name):
            problems.append((where("hosts", index, host.name, "gpus.health.kernel_log_via"),
                             f"{log_via!r} is not another host; hosts: {sorted(hosts)}"))
        via = getattr(host.transport, "via", None)
        if via is None:
            continue
        at = where("hosts", index, host.name, "transport.via")
        if via == host.name:
            problems.append((at, "names the host itself"))
        elif via not in hosts:
            problems.append((at, f"{via!r} is not a host; hosts: {sorted(hosts)}"))
        elif hosts[via].transport.kind != "ssh":
            problems.append((at, f"{via!r} must be an ssh host (it is {hosts[via].transport.kind})"))
        for iface_index, name in _dups([(i, f.name) for i, f in enumerate(host.interfaces)]):
            problems.append((f"hosts[{index}:{host.name}].interfaces[{iface_index}].name", f"duplicate {name!r}"))
    launch = inv.launch
    background = [s for s in (launch.start if launch else []) if s.background]
    for index, ep in enumerate(inv.endpoints):
        if ep.host is not None and ep.host not in hosts:
            problems.append((where("endpoints", index, ep.name, "host"),
                             f"{ep.host!r} is not a host; hosts: {sorted(hosts)}"))
        if ep.logs == "launch" and not background:
            problems.append((where("endpoints", index, ep.name, "logs"),
                             "`launch` needs a [[launch.start]] step with background = true"))
        if ep.logs is not None and ep.host is None:
            problems.append((where("endpoints", index, ep.name, "logs"), "needs `host` (where the log is read)"))
        speculative = ep.expect.speculative if ep.expect is not None else None
        if speculative is not None and (why := speculative_algorithm_problem(ep.engine, speculative.algorithm)):
            problems.append((where("endpoints", index, ep.name, "expect.speculative.algorithm"), why))
    for section, gates in (("perf", inv.perf), ("niah", inv.niah), ("agentic", getattr(inv, "agentic", []))):
        for index, gate in enumerate(gates):
            if gate.endpoint not in endpoints:
                problems.append((f"{section}[{index}].endpoint",
                                 f"{gate.endpoint!r} is not an endpoint; endpoints: {endpoints}"))
    for index, label in _dups([(i, f"{g.endpoint}/{g.label}") for i, g in enumerate(inv.perf)]):
        problems.append((f"perf[{index}].name", f"{label!r} repeats: give each [[perf]] of an endpoint a name"))
    for section, grids in (("niah", inv.niah), ("agentic", getattr(inv, "agentic", []))):  # the grid kinds' sections
        for index, label in _dups([(i, f"{g.endpoint}/{g.name}") for i, g in enumerate(grids)]):
            problems.append((f"{section}[{index}].name",
                             f"{label!r} repeats: give each [[{section}]] of an endpoint a name"))
    if launch is not None:
        for phase in ("preflight", "start", "stop"):
            for index, step in enumerate(getattr(launch, phase)):
                at = f"launch.{phase}[{index}]"
                if step.host not in hosts:
                    problems.append((f"{at}.host", f"{step.host!r} is not a host; hosts: {sorted(hosts)}"))
                elif step.background and hosts[step.host].transport.kind != "local":
                    problems.append((f"{at}.background", "background steps run on local hosts only"))
        if launch.ready.endpoint not in endpoints:
            problems.append(("launch.ready.endpoint",
                             f"{launch.ready.endpoint!r} is not an endpoint; endpoints: {endpoints}"))
        for index, source in enumerate(launch.ready.watch):
            if (match := WATCH_RE.match(source)) and match["host"] and match["host"] not in hosts:
                problems.append((f"launch.ready.watch[{index}]", f"{match['host']!r} is not a host"))
    for index, blocker in enumerate(inv.blockers):
        if blocker.revisit and blocker.revisit not in decisions:
            problems.append((where("blockers", index, blocker.id, "revisit"),
                             f"{blocker.revisit!r} is not a decision id; decisions: {decisions}"))
    for name in inv.deployment.relevant_files:
        if name not in hosts:
            problems.append((f"deployment.relevant_files.{name}", f"{name!r} is not a host; hosts: {sorted(hosts)}"))
    return problems


class Inventory(Spec):
    """A deployment's whole contract."""

    deployment: DeploymentSpec
    hosts: list[HostSpec] = []
    endpoints: list[EndpointSpec] = []
    perf: list[PerfSpec] = []
    niah: list[NiahSpec] = []
    agentic: list[AgenticSpec] = []
    launch: LaunchSpec | None = None
    decisions: list[DecisionSpec] = []
    blockers: list[BlockerSpec] = []
    hints: list[HintSpec] = []
    """The owners' hints for checks on this deployment (its own history), quoted after the suite's hint."""
    schema_: str | None = Field(None, alias="$schema")
    """Path or URL of the JSON Schema, for editors; ignored by the suite."""

    @model_validator(mode="after")
    def _references_resolve(self, info: ValidationInfo) -> Inventory:
        if (info.context or {}).get("references") == "deferred":
            return self  # parse_inventory reports them itself, each with its key path
        if problems := reference_problems(self):
            raise ValueError("; ".join(f"{where}: {reason}" for where, reason in problems))
        return self

    def host(self, name: str) -> HostSpec:
        """The host called `name`."""
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(f"no host {name!r}; hosts: {[h.name for h in self.hosts]}")

    def endpoint(self, name: str) -> EndpointSpec:
        """The endpoint called `name`."""
        for endpoint in self.endpoints:
            if endpoint.name == name:
                return endpoint
        raise KeyError(f"no endpoint {name!r}; endpoints: {[e.name for e in self.endpoints]}")

    def platform_hosts(self, platform: str) -> list[HostSpec]:
        """Hosts of one platform, in inventory order."""
        return [h for h in self.hosts if h.platform == platform]


def shipped_inventories() -> Path:
    """Where the example inventories (kpro6, spark, local) and `inventory.schema.json` are: `llmval/inventories`
    in an installed wheel, `inventories/` of the checkout in an editable install."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "inventories", package.parent.parent / "inventories"):
        if (candidate / SCHEMA_FILE).is_file():
            return candidate
    return package / "inventories"


SCHEMA_FILE = "inventory.schema.json"


def _key_path(loc: tuple[int | str, ...], data: object) -> str:
    """`hosts[1].gpus.count`, naming list items by their `name` where they have one."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            label = str(item)
            if isinstance(node, list) and item < len(node) and isinstance(node[item], dict):
                name = node[item].get("name") or node[item].get("id")
                if isinstance(name, str):
                    label = f"{item}:{name if len(name) <= 40 else name[:40] + '…'}"
            parts.append(f"[{label}]")
            node = node[item] if isinstance(node, list) and item < len(node) else None
        else:
            if item in {"local", "ssh", "docker", "pct"} and parts and parts[-1].endswith("transport"):
                continue  # the discriminator's own tag adds nothing a reader can act on
            parts.append(f".{item}" if parts else str(item))
            node = node.get(item) if isinstance(node, dict) else None
    return "".join(parts)


def _problems(error: ValidationError, data: object, text: str | None = None) -> list[tuple[str, str]]:
    """pydantic's errors as (key path, reason), each key path with its line where the TOML text is known; an
    unknown key names the key it most likely meant."""
    problems = []
    schema: dict | None = None
    for err in error.errors(include_url=False):
        reason = err["msg"]
        if err["type"] == "extra_forbidden":
            schema = schema or Inventory.model_json_schema(by_alias=True)
            meant = meant_key(schema, tuple(err["loc"]))
            reason = (f"unknown key: did you mean {meant}?" if meant else
                      f"unknown key (check its spelling; see {shipped_inventories() / SCHEMA_FILE})")
        elif err["type"] == "missing":
            reason = "required key is missing"
        elif err["type"] == "value_error":
            reason = reason.removeprefix("Value error, ")
        elif isinstance(value := err.get("input"), str | int | float) and str(value) not in reason:
            shown = repr(value if not isinstance(value, str) or len(value) <= 80 else value[:80] + "…")
            reason = f"{reason} (got {shown})"
        problems.append((_key_path(err["loc"], data), with_line(reason, text, tuple(err["loc"]))))
    return problems


def parse_inventory(data: dict, source: str = "<inventory>", text: str | None = None) -> Inventory:
    """Validate already-parsed inventory data; raise InventoryError naming `source` and key paths (with their
    lines, where `text`, the TOML it was read from, is given)."""
    if problems := raw_problems(data, _key_path):
        raise InventoryError(source, problems)
    try:
        inventory = Inventory.model_validate(data, context={"references": "deferred"})
    except ValidationError as error:
        raise InventoryError(source, _problems(error, data, text)) from None
    except RecursionError:
        raise InventoryError(source, [("", "nested too deeply")]) from None
    if problems := reference_problems(inventory):
        raise InventoryError(source, [(where, with_line(reason, text, loc_of(where))) for where, reason in problems])
    return inventory


def load_inventory(path: str | Path) -> Inventory:
    """Read and validate an inventory TOML file: the one validation pytest and `check-inventory` share."""
    path = Path(path)
    try:
        raw = read_regular(path, MAX_INVENTORY_BYTES)  # a FIFO or /dev/zero is refused, never read
    except FileNotFoundError:
        raise InventoryError(str(path), [("", "file not found")]) from None
    except OSError as error:
        raise InventoryError(str(path), [("", f"cannot read: {error.strerror or error}")]) from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raise InventoryError(str(path), [("", "the file starts with a UTF-8 byte-order mark (BOM), which TOML does "
                                          "not allow; save it as UTF-8 without BOM")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InventoryError(str(path), [("", f"not UTF-8 (byte {error.start}: {raw[error.start:error.start + 1]!r}); "
                                          "TOML files are UTF-8")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InventoryError(str(path), [("", f"malformed TOML: {error}")]) from None
    except RecursionError:
        raise InventoryError(str(path), [("", "malformed TOML: nested too deeply")]) from None
    return parse_inventory(data, str(path), text)


def inventory_json_schema() -> str:
    """The JSON Schema of the inventory, for editors (taplo, VS Code Even Better TOML)."""
    schema = Inventory.model_json_schema(by_alias=True)
    schema["title"] = "llmval inventory"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
