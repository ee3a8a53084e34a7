"""The agentic load run of a [[perf]] section (`[perf.agentic_load]`): its profile, what was measured, its report.

`_session.PerfSession.agentic` measures it with the session's policy, as every perf run: under the engine lock,
after the server is idle, with the client host's load read over the window (`_hostload`: a busy host is measured
once more, then `ClientHostBusy`), the engine's /metrics sampled through it. The run lands in
`<reports>/perf/<label>-agentic.json` (every turn, TTFT by context length and turn, the prefix-cache hits, goodput
under the section's SLOs, the samples, the client host) and its plot in `<reports>/perf-<label>-agentic.png`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..inventory import EndpointSpec, PerfSpec
from ._agentic import AgenticProfile, AgenticRun
from ._hostload import HostWindow
from ._rate import Slo

CONTEXT_MARGIN_TOKENS = 64


@dataclass
class AgenticMeasured:
    """One measured agentic run, its SLO, the client host over it, its JSON report and plot."""

    run: AgenticRun
    slo: Slo
    host: HostWindow
    report: Path
    plot: Path


def profile_for(spec: PerfSpec, endpoint: EndpointSpec) -> AgenticProfile:
    """The agentic profile of `spec` (its `[perf.agentic_load]`) against `endpoint`."""
    load = spec.agentic_load
    if load is None:
        raise ValueError(f"[[perf]] {spec.label} declares no agentic_load")
    limit = load.max_context_tokens
    if limit is None and endpoint.max_model_len is not None:
        limit = endpoint.max_model_len - load.output_len - CONTEXT_MARGIN_TOKENS
    return AgenticProfile(model=endpoint.model, sessions=load.sessions, turns=load.turns,
                          concurrency=load.concurrency, output_len=load.output_len, think_s=load.think_s,
                          seed=load.seed, temperature=spec.temperature, ignore_eos=spec.ignore_eos,
                          tools=load.tools, max_context_tokens=limit)


def write_agentic_report(reports_dir: Path, spec: PerfSpec, run: AgenticRun, slo: Slo, host: HostWindow) -> Path:
    """`<reports_dir>/perf/<label>-agentic.json`: every turn, TTFT by context and turn, goodput, the client host."""
    folder = reports_dir / "perf"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.label}-agentic.json"
    body = {"client_host": host.as_json(), **run.as_json(slo)}
    path.write_text(json.dumps(body, indent=1, default=str) + "\n", encoding="utf-8")
    return path
