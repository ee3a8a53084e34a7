"""The NIAH grid kind, declared for the grid plugin: `[[niah]]` sections, cells from `plan_cells`, measured by
`NiahRunner` with the endpoint's own tokenizer."""

from __future__ import annotations

import httpx

from ..engines import adapter_class
from ..grid import GridKind, ServerTokenCounter
from ..grid.kinds import Progress
from ..inventory import EndpointSpec, NiahSpec
from .grid import plan_cells
from .runner import NiahRunner


def make_runner(spec: NiahSpec, endpoint: EndpointSpec, client: httpx.Client, progress: Progress) -> NiahRunner:
    count = ServerTokenCounter(client, endpoint=endpoint.name, engine=adapter_class(endpoint), model=endpoint.model,
                               say=progress)
    return NiahRunner(spec, endpoint, client, count, progress=progress)


NIAH = GridKind(
    name="niah", section="niah", plan_cells=plan_cells, make_runner=make_runner,
    facts={
        "context_lengths": ("accuracy.niah.cell",),
        "min_overall": ("accuracy.niah.min_overall",),
        "all_pass_up_to": ("accuracy.niah.all_pass_up_to",),
        "prompt_tokens_tolerance": ("accuracy.niah.prompt_tokens",),
    },
    settings=frozenset({"endpoint", "name", "depths", "trials", "seed", "variants", "values", "smoke_context_lengths",
                        "max_tokens", "margin_tokens", "budget_s"}),
)
