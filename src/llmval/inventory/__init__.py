"""The inventory: one TOML file that is the whole contract of a deployment.

`load_inventory(path)` reads and validates it; any problem becomes one `InventoryError` naming the
file, the key path and the reason. Sections: `[deployment]`, `[[hosts]]`, `[[endpoints]]`,
`[[perf]]`, `[[niah]]`, `[[agentic]]`, `[launch]`, `[[decisions]]`, `[[blockers]]`.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from pydantic import Field, ValidationError, model_validator

from ..errors import InventoryError
from ._base import Spec
from .accuracy import AgenticSpec, NiahSpec
from .hosts import (
    DockerTransport,
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
from .launch import LaunchSpec, ReadinessSpec, StepSpec, WaitSpec
from .perf import PerfSpec
from .report import BlockerSpec, DecisionSpec, DeploymentSpec
from .serving import EndpointSpec, ServingExpect, SpeculativeSpec, ToolCallGates

__all__ = [
    "AgenticSpec",
    "BlockerSpec",
    "DecisionSpec",
    "DeploymentSpec",
    "DockerTransport",
    "EndpointSpec",
    "EnvSpec",
    "GpuHealthSpec",
    "GpuProcessSpec",
    "GpuSpec",
    "GuestSplit",
    "HostSpec",
    "InterfaceSpec",
    "Inventory",
    "LaunchSpec",
    "LocalTransport",
    "ModelFileSpec",
    "NcclSpec",
    "NiahSpec",
    "PctTransport",
    "PerfSpec",
    "ProxmoxSpec",
    "RaySpec",
    "ReadinessSpec",
    "ServiceSpec",
    "ServingExpect",
    "Source",
    "SpeculativeSpec",
    "SshTransport",
    "StepSpec",
    "ToolCallGates",
    "WaitSpec",
    "inventory_json_schema",
    "load_inventory",
]


def _duplicates(names: list[str]) -> list[str]:
    return sorted({n for n in names if names.count(n) > 1})


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
    schema_: str | None = Field(None, alias="$schema")
    """Path or URL of the JSON Schema, for editors; ignored by the suite."""

    @model_validator(mode="after")
    def _references_resolve(self) -> Inventory:
        host_names = [h.name for h in self.hosts]
        endpoint_names = [e.name for e in self.endpoints]
        problems: list[str] = []
        for kind, names in (("host", host_names), ("endpoint", endpoint_names)):
            if dups := _duplicates(names):
                problems.append(f"duplicate {kind} names: {dups}")
        for host in self.hosts:
            via = getattr(host.transport, "via", None)
            if via is not None and via not in host_names:
                problems.append(f"hosts '{host.name}': transport.via '{via}' is not a host; hosts: {host_names}")
            if via == host.name:
                problems.append(f"hosts '{host.name}': transport.via names the host itself")
            health = host.gpus.health if host.gpus is not None else None
            log_via = health.kernel_log_via if health is not None else None
            if log_via is not None and (log_via not in host_names or log_via == host.name):
                problems.append(f"hosts '{host.name}': gpus.health.kernel_log_via '{log_via}' is not another host; "
                                f"hosts: {host_names}")
        for ep in self.endpoints:
            if ep.host is not None and ep.host not in host_names:
                problems.append(f"endpoints '{ep.name}': host '{ep.host}' is not a host; hosts: {host_names}")
        for section, gates in (("perf", self.perf), ("niah", self.niah), ("agentic", self.agentic)):
            for gate in gates:
                if gate.endpoint not in endpoint_names:
                    problems.append(
                        f"{section}: endpoint '{gate.endpoint}' is not an endpoint; endpoints: {endpoint_names}"
                    )
        if self.launch is not None:
            for step in [*self.launch.start, *self.launch.stop]:
                if step.host not in host_names:
                    problems.append(f"launch step '{step.name or step.run[:40]}': host '{step.host}' is not a host")
            if self.launch.ready.endpoint not in endpoint_names:
                problems.append(f"launch.ready: endpoint '{self.launch.ready.endpoint}' is not an endpoint")
        if problems:
            raise ValueError("; ".join(problems))
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
                    label = f"{item}:{name}"
            parts.append(f"[{label}]")
            node = node[item] if isinstance(node, list) and item < len(node) else None
        else:
            if item in {"local", "ssh", "docker", "pct"} and parts and parts[-1].endswith("transport"):
                continue  # the discriminator's own tag adds nothing a reader can act on
            parts.append(f".{item}" if parts else str(item))
            node = node.get(item) if isinstance(node, dict) else None
    return "".join(parts)


def _problems(error: ValidationError, data: object) -> list[tuple[str, str]]:
    problems = []
    for err in error.errors(include_url=False):
        reason = err["msg"]
        if err["type"] == "extra_forbidden":
            reason = "unknown key (check its spelling; see inventories/inventory.schema.json)"
        elif err["type"] == "missing":
            reason = "required key is missing"
        elif err["type"] in {"literal_error", "union_tag_invalid"}:
            reason = f"{reason} (got {err.get('input')!r})"
        problems.append((_key_path(err["loc"], data), reason))
    return problems


def parse_inventory(data: dict, source: str = "<inventory>") -> Inventory:
    """Validate already-parsed inventory data; raise InventoryError naming `source` and key paths."""
    try:
        return Inventory.model_validate(data)
    except ValidationError as error:
        raise InventoryError(source, _problems(error, data)) from None


def load_inventory(path: str | Path) -> Inventory:
    """Read and validate an inventory TOML file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InventoryError(str(path), [("", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InventoryError(str(path), [("", f"cannot read: {error}")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InventoryError(str(path), [("", f"malformed TOML: {error}")]) from None
    return parse_inventory(data, str(path))


def inventory_json_schema() -> str:
    """The JSON Schema of the inventory, for editors (taplo, VS Code Even Better TOML)."""
    schema = Inventory.model_json_schema(by_alias=True)
    schema["title"] = "llmval inventory"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
