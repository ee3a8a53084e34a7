"""Which inventory fields are facts to judge, and which check ids judge them: no green by omission.

`FACTS` maps each fact field of a target's inventory section (`hosts`, `endpoints`, `perf`, each grid kind's) to the
check ids (globs) whose verdicts judge it; `SETTINGS` lists the fields that only say how to reach or run a target.
No fact is listed here: each host fact's declaration names the fields it is evidence for and their checks
(`@fact(..., checks=...)` in `llmval.hostfacts`); an endpoint or perf field's declaration in the inventory model
carries its checks (`Annotated[..., JudgedBy("serving.kv_cache.dtype")]`, `llmval.inventory.JudgedBy`); a grid
kind's are its declaration's (`GridKind.facts`, `.settings` in `llmval.grid`). A self-test proves every field of the
inventory models is in exactly one of FACTS and SETTINGS, so a field added to the inventory without a check shows up
at once. In a full run, `not_judged(inventory, verdicts)`
lists every declared fact that no held, broken or blocked verdict on that target judged; the status document shows
the list and the run is not GREEN while it is non-empty.

    not_judged(inventory, verdicts) -> [Unjudged(section="hosts", target="kpro6-ct129", field="gpus.p2p",
                                                 checks=("hosts.gpu.p2p",))]
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable
from fnmatch import fnmatchcase

from pydantic import BaseModel

from ..core.verdict import Cause, Verdict
from ..grid import grid_name
from ..grid_kinds import GRID_KINDS
from ..hostfacts import judged_fields
from ..inventory import EndpointSpec, HostSpec, Inventory, PerfSpec, judged_by


def field_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every leaf field of an inventory model as a dotted path, in declaration order (nested models expanded)."""
    paths = []
    for name, info in model.model_fields.items():
        nested = [a for b in (info.annotation, *typing.get_args(info.annotation)) for a in (b, *typing.get_args(b))
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        paths += field_paths(nested[0], f"{prefix}{name}.") if nested else [prefix + name]
    return paths


def _in_model_order(fields: dict[str, tuple[str, ...]], model: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    leaves = field_paths(model)

    def rank(field: str) -> int:
        return next((i for i, leaf in enumerate(leaves) if leaf == field or leaf.startswith(field + ".")), len(leaves))

    return {field: fields[field] for field in sorted(fields, key=rank)}


FACTS: dict[str, dict[str, tuple[str, ...]]] = {
    "hosts": _in_model_order(judged_fields(), HostSpec),
    "endpoints": _in_model_order(judged_by(EndpointSpec), EndpointSpec),  # each field's JudgedBy (llmval.inventory)
    "perf": judged_by(PerfSpec),
    **{kind.section: dict(kind.facts) for kind in GRID_KINDS},  # each grid kind declares its own (llmval.grid)
}
SETTINGS: dict[str, frozenset[str]] = {
    "hosts": frozenset({"name", "platform", "role", "transport", "timeout_s", "env.source", "nccl.log", "ray.address",
                        "ray.run_in", "smoke", "wait_ready_s"}),
    "endpoints": frozenset({"name", "platform", "base_url", "api_key_env", "host", "logs", "request_timeout_s",
                            "health_timeout_s", "wait_ready_s", "smoke"}),
    "perf": frozenset({"endpoint", "name", "input_len", "output_len", "temperature", "ignore_eos", "warmup_requests",
                       "c1_requests", "requests_per_concurrency", "throughput_concurrency", "ttft_concurrency",
                       "quoted_tok_s", "request_rates", "rate_requests", "rate_max_concurrency", "goodput_ttft_ms",
                       "goodput_tpot_ms", "metrics_interval_s", "machine"}),
    **{kind.section: kind.settings for kind in GRID_KINDS},
}
JUDGING = (Cause.HELD, Cause.BROKEN, Cause.BLOCKED)


@dataclasses.dataclass(frozen=True)
class Unjudged:
    """A fact the inventory declares that no verdict of this run judged."""

    section: str
    target: str
    field: str
    checks: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.section}[{self.target}].{self.field} (judged by {', '.join(self.checks)})"


def _is_declared(value: object) -> bool:
    return value not in (None, False, [], {}, "")


def _value(spec: object, path: str) -> object:
    """The value at `path` if the inventory sets it explicitly (a default declares nothing), else None."""
    for part in path.split("."):
        if part not in getattr(spec, "model_fields_set", ()):
            return None
        spec = getattr(spec, part, None)
        if spec is None:
            return None
    return spec


def _targets(inventory: Inventory) -> Iterable[tuple[str, str, object]]:
    yield from (("hosts", h.name, h) for h in inventory.hosts)
    yield from (("endpoints", e.name, e) for e in inventory.endpoints)
    yield from (("perf", p.label, p) for p in inventory.perf)
    yield from ((kind.section, grid_name(g), g) for kind in GRID_KINDS for g in kind.specs(inventory))


def not_judged(inventory: Inventory, verdicts: Iterable[Verdict]) -> list[Unjudged]:
    """Declared facts (FACTS fields the inventory sets on a target) without a held, broken or blocked verdict on
    that target."""
    judged: dict[str, set[str]] = {}
    for verdict in verdicts:
        if verdict.cause in JUDGING:
            judged.setdefault(verdict.target, set()).add(verdict.check)
    missing = []
    for section, name, spec in _targets(inventory):
        checks = judged.get(name, set())
        for field, patterns in FACTS[section].items():
            if _is_declared(_value(spec, field)) and not any(fnmatchcase(c, p) for c in checks for p in patterns):
                missing.append(Unjudged(section, name, field, patterns))
    return missing
