"""One correctness-under-load measurement: the probes idle, then under a held load, then idle again.

Under the engine lock (`llmval.load.engine_lock`; no other extra engine runs beside it) and after the server is idle
(`llmval.load.wait_idle`):

1. every probe is built (NIAH haystacks fitted with `/tokenize`) and asked once, idle;
2. `LoadHold` starts C streams of the perf section's workload (C = `[perf.correctness] concurrency`, default
   the section's `throughput_concurrency`) and waits until they are in flight together;
3. every probe is asked again, one after another, each ask's window kept with the load's mean in flight and
   the engine's running + waiting requests at its start; then the load stops (its streams are cut);
4. with `repeat_idle`, after the server is idle again, every probe is asked once more.

The run is its own (not the perf gates' throughput run): the probes' tokens would count as other traffic in
that run's window and change what it measures.

    run = measure(endpoint, perf_spec, lock_path=ENGINE_LOCK, reports_dir=Path("reports"))
    [g.outcome for g in run.gates()], run.report
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from ..core.errors import LlmvalError
from ..engines import adapter_class, adapter_for
from ..inventory import EndpointSpec, PerfSpec
from ..inventory.perf import CorrectnessSpec
from ..io.http import api_key_headers, endpoint_async_client, endpoint_client
from ..load import (
    WireClient,
    WordPrompts,
    Workload,
    completion_payload,
    engine_lock,
    read_counters,
    sender,
    wait_idle,
    workload_for,
)
from .compare import CRITERIA, GateResult, ProbeSample, judge_gate
from .hold import LoadHold, Window
from .probes import Probe, ProbeAnswer, niah_probes, tool_probes

LOCK_TIMEOUT_S = 900.0


@dataclass
class CorrectnessRun:
    """The probes' samples, the load that was held, and what could not be built."""

    endpoint: str
    label: str
    concurrency: int
    compare: str
    workload: Workload
    samples: list[ProbeSample] = field(default_factory=list)
    not_built: dict[str, str] = field(default_factory=dict)
    """Probe kind -> why its probes could not be built (e.g. no /tokenize for NIAH)."""
    load_requests: int = 0
    load_failed: int = 0
    load_tokens: int = 0
    phases_s: dict[str, float] = field(default_factory=dict)
    started: str = ""
    report: Path | None = None
    lock_wait_s: float = 0.0
    """How long the engine lock was waited for (not part of the run's own time)."""

    def gates(self) -> list[GateResult]:
        """Every `perf.correctness.*` gate (a kind whose probes could not be built cannot be checked)."""
        out = []
        for criterion in CRITERIA:
            if criterion.kind in self.not_built:
                why = self.not_built[criterion.kind]
                out.append(GateResult(criterion.check, "could_not_check", f"{criterion.what} kept under load",
                                      f"the {criterion.kind} probes could not be built: {why}", why))
            else:
                out.append(judge_gate(self.samples, criterion, self.compare))
        return out

    def gate(self, check: str) -> GateResult:
        return next(g for g in self.gates() if g.check == check)

    def as_json(self) -> dict:
        return {"endpoint": self.endpoint, "label": self.label, "started": self.started,
                "concurrency": self.concurrency, "compare": self.compare, "workload": asdict(self.workload),
                "load": {"requests": self.load_requests, "failed": self.load_failed, "output_tokens": self.load_tokens},
                "phases_s": {k: round(v, 2) for k, v in self.phases_s.items()},
                "lock_wait_s": round(self.lock_wait_s, 1),
                "summary": self.summary(), "not_built": self.not_built,
                "gates": [g.as_json() for g in self.gates()], "samples": [s.as_json() for s in self.samples]}

    def summary(self) -> dict:
        """The counts the closing note and the bench line quote."""
        return {"probes": len(self.samples), "held": sum(s.is_held for s in self.samples),
                "text_changed": sum(s.is_text_changed for s in self.samples),
                "text_changed_idle_too": sum(s.is_text_changed and s.is_text_unstable_idle for s in self.samples),
                "judged_changed": sum(s.idle.is_correct != s.loaded.is_correct or s.idle.is_valid != s.loaded.is_valid
                                      for s in self.samples),
                "mean_in_flight": round(sum(s.in_flight for s in self.samples) / len(self.samples), 3)
                if self.samples else None,
                "wall_s": round(sum(self.phases_s.values()), 1),
                "outcomes": {g.check: g.outcome for g in self.gates()}}


async def _ask(probe: Probe) -> ProbeAnswer:
    return await asyncio.to_thread(probe.ask)  # the probes are the accuracy checks' sync requests


async def _build_probes(endpoint: EndpointSpec, spec: CorrectnessSpec, client: httpx.Client,
                        not_built: dict[str, str]) -> list[Probe]:
    probes: list[Probe] = []
    try:
        probes += await asyncio.to_thread(niah_probes, endpoint, spec, client)
    except LlmvalError as error:
        not_built["niah"] = str(error)
    probes += tool_probes(adapter_for(endpoint, client), spec)
    return probes


async def measure_async(endpoint: EndpointSpec, perf: PerfSpec, *, client: httpx.Client,
                        async_client: httpx.AsyncClient, streamer: WireClient | None = None,
                        say: Callable[[str], None] = lambda line: None) -> CorrectnessRun:
    """The three passes against `endpoint` (see the module docstring); the caller holds the engine lock."""
    spec, concurrency = perf.correctness, perf.correctness_concurrency
    if spec is None or concurrency is None:
        raise ValueError(f"[[perf]] {perf.label} declares no [perf.correctness]")
    engine = adapter_class(endpoint)
    workload = workload_for(perf, endpoint, concurrency)
    run = CorrectnessRun(endpoint.name, perf.label, concurrency, spec.compare, workload,
                         started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    began = time.monotonic()

    def phase(name: str) -> None:
        nonlocal began
        now = time.monotonic()
        run.phases_s[name] = now - began
        began = now

    probes = await _build_probes(endpoint, spec, client, run.not_built)
    await wait_idle(async_client, endpoint.name, engine)
    phase("build")
    idle = [await _ask(p) for p in probes]
    say(f"perf {perf.label}: correctness: {len(probes)} probes asked idle "
        f"({sum(a.is_correct for a in idle)} right, {sum(a.is_valid for a in idle)} valid)")
    phase("idle")
    maker = await WordPrompts.create(async_client, model=workload.model, input_len=workload.input_len,
                                     endpoint=endpoint.name)
    nonce, index = secrets.token_hex(4), iter(range(10**9))

    def next_payload() -> dict:
        text = maker.texts(nonce, 1, first_index=next(index))[0]
        return completion_payload(model=workload.model, prompt=text, output_len=workload.output_len,
                                  temperature=workload.temperature, ignore_eos=workload.ignore_eos)

    hold = LoadHold(sender(streamer if streamer is not None else async_client), next_payload, concurrency)
    await hold.start()
    loaded: list[tuple[ProbeAnswer, Window, float | None]] = []
    try:
        await hold.wait_full(spec.hold_timeout_s)
        say(f"perf {perf.label}: correctness: load holds {concurrency} streams ({workload.key()}); asking under it")
        for probe in probes:
            counters = await read_counters(async_client, endpoint.name, engine)
            busy = None if counters is None or counters.running is None or counters.waiting is None \
                else counters.running + counters.waiting
            t0 = hold.clock()
            answer = await _ask(probe)
            loaded.append((answer, Window(t0, hold.clock()), busy))
    finally:
        await hold.stop()
        if streamer is not None:
            await streamer.aclose()  # close the cut streams' connections, so the engine aborts them now
        run.load_requests, run.load_failed = len(hold.intervals), hold.failed
        run.load_tokens = sum(i.tokens or 0 for i in hold.intervals)
    phase("loaded")
    after: list[ProbeAnswer | None] = [None] * len(probes)
    if spec.repeat_idle:
        await wait_idle(async_client, endpoint.name, engine)
        after = [await _ask(p) for p in probes]
        phase("idle_after")
    for probe, first, (answer, window, busy), last in zip(probes, idle, loaded, after, strict=True):
        run.samples.append(ProbeSample(probe.id, probe.kind, concurrency, first, answer, last,
                                       in_flight=hold.in_flight(window), load_failures=tuple(hold.failures(window)),
                                       engine_busy=busy))
    s = run.summary()
    say(f"perf {perf.label}: correctness at C={concurrency}: {s['probes']} probes, {s['held']} held, text changed "
        f"{s['text_changed']} (idle again too: {s['text_changed_idle_too']}), judged changed {s['judged_changed']}; "
        f"{s['outcomes']}")
    return run


def measure(endpoint: EndpointSpec, perf: PerfSpec, *, lock_path: Path, reports_dir: Path,
            lock_timeout_s: float = LOCK_TIMEOUT_S, say: Callable[[str], None] = lambda line: None) -> CorrectnessRun:
    """`measure_async` under the engine lock with the endpoint's own clients; the JSON report written to
    `<reports>/perf/<label>-correctness-c<C>.json`."""
    async def go() -> CorrectnessRun:
        concurrency = perf.correctness_concurrency or 1
        with endpoint_client(endpoint) as client:
            async with endpoint_async_client(endpoint, max_connections=concurrency + 4) as async_client:
                streamer = WireClient(endpoint.root_url, headers=api_key_headers(endpoint.api_key_env),
                                      timeout_s=endpoint.request_timeout_s)
                try:
                    return await measure_async(endpoint, perf, client=client, async_client=async_client,
                                               streamer=streamer, say=say)
                finally:
                    await streamer.aclose()

    say(f"perf {perf.label}: correctness under load at C={perf.correctness_concurrency} under {lock_path}")
    waited = time.monotonic()
    with engine_lock(lock_path, lock_timeout_s, say):
        waited = time.monotonic() - waited
        run = asyncio.run(go())
    run.lock_wait_s = waited
    folder = reports_dir / "perf"
    folder.mkdir(parents=True, exist_ok=True)
    run.report = folder / f"{perf.label}-correctness-c{run.concurrency}.json"
    run.report.write_text(json.dumps(run.as_json(), indent=1, ensure_ascii=False, default=str) + "\n",
                          encoding="utf-8")
    return run
