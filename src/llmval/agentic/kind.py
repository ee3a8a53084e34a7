"""The agentic tool-call grid kind, declared for the grid plugin: `[[agentic]]` sections, cells from
`plan_cells`, measured by `AgenticRunner` through the endpoint's engine adapter with its own tokenizer."""

from __future__ import annotations

import httpx

from ..engines import adapter_for
from ..grid import GridKind, ServerTokenCounter
from ..grid.kinds import Progress
from ..inventory import AgenticSpec, EndpointSpec
from .grid import plan_cells
from .runner import AgenticRunner


def make_runner(spec: AgenticSpec, endpoint: EndpointSpec, client: httpx.Client, progress: Progress
                ) -> AgenticRunner:
    adapter = adapter_for(endpoint, client)
    count = ServerTokenCounter(client, endpoint=endpoint.name, engine=type(adapter), model=endpoint.model,
                               say=progress)
    return AgenticRunner(spec, adapter, count, progress=progress)


AGENTIC = GridKind(
    name="agentic", section="agentic", plan_cells=plan_cells, make_runner=make_runner,
    facts={
        "context_lengths": ("accuracy.agentic.cell", "accuracy.agentic.context_limit", "accuracy.agentic.http_error"),
        "min_overall": ("accuracy.agentic.min_overall",),
        "all_pass_up_to": ("accuracy.agentic.all_pass_up_to",),
        "prompt_tokens_tolerance": ("accuracy.agentic.prompt_tokens",),
        "min_valid": ("accuracy.agentic.min_valid",),
    },
    settings=frozenset({"endpoint", "name", "depths", "needles", "modes", "seed", "tool_choice", "max_tokens",
                        "margin_tokens", "budget_s", "strict_tools", "request_timeout_s", "smoke_context_lengths"}),
)
