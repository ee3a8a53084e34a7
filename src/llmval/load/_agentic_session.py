"""The agentic load run of a [[perf]] section (`[perf.agentic_load]`), measured with the perf session's policy.

As every perf run (`_session.PerfSession`): under the engine lock, after the server is idle, with the client host's
load read over the window (`_hostload`: a busy host is measured once more, then `ClientHostBusy`), the engine's
/metrics sampled through it. The run lands in `<reports>/perf/<label>-agentic.json` (every turn, TTFT by context
length and turn, the prefix-cache hits, goodput under the section's SLOs, the samples, the client host) and its
plot in `<reports>/perf-<label>-agentic.png`.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..engines import adapter_class
from ..inventory import EndpointSpec, PerfSpec
from ..io.http import api_key_headers
from ._agentic import AgenticProfile, AgenticRun, plot_agentic, run_agentic
from ._hostload import ClientHostBusy, HostWindow
from ._lock import engine_lock
from ._rate import Slo
from ._wire import WireClient

if TYPE_CHECKING:
    from ._session import PerfSession

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


async def _run(session: PerfSession, spec: PerfSpec, endpoint: EndpointSpec,
               profile: AgenticProfile) -> tuple[AgenticRun, HostWindow]:
    from ._session import wait_idle

    engine = adapter_class(endpoint)
    probe = session._probe(endpoint)
    base_url = str(endpoint.base_url).rstrip("/")
    async with session._connect(endpoint, 4) as client, \
            WireClient(base_url, headers=api_key_headers(endpoint.api_key_env),
                       timeout_s=endpoint.request_timeout_s) as streamer:
        async def before_window() -> None:
            await wait_idle(client, endpoint.name, engine)
            probe.start()

        run = await run_agentic(client, streamer, profile, endpoint=endpoint.name, engine=engine,
                                before_window=before_window, sample_interval_s=spec.metrics_interval_s)
    return run, probe.stop()


def measure_agentic(session: PerfSession, spec: PerfSpec, attempts: int) -> AgenticMeasured:
    """Measure `spec`'s agentic load once (again once when the client host was busy), write its report and plot."""
    endpoint = session.inventory.endpoint(spec.endpoint)
    profile = profile_for(spec, endpoint)
    slo = Slo(ttft_ms=spec.goodput_ttft_ms, tpot_ms=spec.goodput_tpot_ms)
    session.say(f"perf {spec.label}: agentic load ({profile.key()}) under {session.lock_path}")
    with engine_lock(session.lock_path, session.lock_timeout_s):
        for attempt in range(1, attempts + 1):
            run, host = asyncio.run(_run(session, spec, endpoint, profile))
            if not session._is_busy(host):
                break
            session.say(f"perf {spec.label}: client host busy during the agentic load, attempt {attempt} "
                        f"({host.busy_reason}); {'measuring again' if attempt < attempts else 'giving up'}")
        else:
            _write(session, spec, run, slo, host)  # the invalid run's report stays, as evidence
            raise ClientHostBusy(f"[{endpoint.name}] the agentic load", host, attempts)
    report = _write(session, spec, run, slo, host)
    plot = plot_agentic([run], session.reports_dir / f"perf-{spec.label}-agentic.png", slo=slo,
                        title=f"{spec.label}: agentic load ({profile.key()})")
    session.say(f"perf {spec.label}: agentic {len(run.turns)} turns of {profile.sessions} sessions in "
                f"{run.duration_s:.1f} s, failed {len(run.failed)}, prefix-cache hits "
                f"{run.prefix_cache_share()[1]}, goodput {run.goodput(slo).share:.0%} "
                f"({slo.describe()}); {report}")
    return AgenticMeasured(run=run, slo=slo, host=host, report=report, plot=plot)


def _write(session: PerfSession, spec: PerfSpec, run: AgenticRun, slo: Slo, host: HostWindow) -> Path:
    folder = session.reports_dir / "perf"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.label}-agentic.json"
    body = {"client_host": host.as_json(), **run.as_json(slo)}
    path.write_text(json.dumps(body, indent=1, default=str) + "\n", encoding="utf-8")
    return path
