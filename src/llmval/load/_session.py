"""The measurement policy of a perf session: what a run must hold to count as a measurement.

`PerfSession.get(spec, concurrency)` measures each ([[perf]] section, concurrency) at most once per
session, failures included (a broken server is never hammered twice):

- under the engine lock (flock), so no other extra engine runs beside the measurement;
- after the server is idle (running + waiting = 0 where the engine's adapter names those gauges,
  bounded by `IDLE_TIMEOUT_S`);
- again once when the engine's counters show that someone else generated tokens during the window,
  and `OtherLoad` when the second attempt saw other traffic too.

`sweep(spec)` runs the section's request-rate sweep (one Poisson run per rate, goodput per rate) once,
under the same lock. Runs land in `<reports>/perf/` as JSON (vLLM's key names and the server identity);
`against_baseline` compares a run with the stored baseline of its own server identity (scaled to this machine's
calibration where the section's gates are machine-relative) and plots both. The pytest plugin
(`fixtures/perf.py`) only wires options, hooks and fixtures to this object.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from ..core.errors import LlmvalError, NotReady
from ..engines import EngineAdapter, ImpossibleMetric, adapter_class
from ..inventory import EndpointSpec, Inventory, PerfSpec
from ..io.http import api_key_headers, endpoint_async_client
from ._agentic import AgenticProfile, AgenticRun, plot_agentic, run_agentic
from ._agentic_session import AgenticMeasured, profile_for, write_agentic_report
from ._baseline import UNITS, Baseline, BaselineStore, MachineScaling, Regression, compare_to_baseline, machine_scaling
from ._calibrate import SCALED_DOWN, SCALED_UP, Calibration, Gates, MachineNotCalibrated, calibrate, scale_gates
from ._engine import read_counters, server_identity, server_key, with_log_acceptance
from ._hostload import ClientHostBusy, HostLoadProbe, HostWindow
from ._lock import engine_lock
from ._plot import plot_run
from ._prompts import BY_USAGE
from ._rate import RatePoint, Slo, goodput, plot_sweep
from ._request import WireClient
from ._runner import LoadRun, OtherLoad, Workload, run_load

IDLE_TIMEOUT_S = 120.0
IDLE_POLL_S = 1.0
ATTEMPTS = 2
MIN_GATE_SCALE = 0.2
"""The least a machine-relative gate is scaled by from a calibration made on a busy host: at 0.041 of the reference
(a host busy with other work, judged with --perf-allow-busy-host) a 20 tok/s decode gate became 0.81 tok/s, which
any engine passes. A calibration on a quiet host is the machine's own speed and is not floored."""
CALIBRATION_ENGINE_CORES_MAX = 0.3
"""Cores an idle engine may use while the machine is calibrated (more: it is serving someone, and slows the
calibration it shares the CPUs with)."""
LOCK_TIMEOUT_S = 900.0


@dataclass
class Measured:
    """One measured run, the identity of the server it ran against, and its JSON report."""

    run: LoadRun
    identity: dict
    report: Path
    host: HostWindow
    """The client host's load over the measured window (`llmval.load._hostload`)."""

    @property
    def server_key(self) -> str:
        return server_key(self.identity)


@dataclass(frozen=True)
class BaselineCheck:
    """A run compared with its stored baseline (None, with `skip_reason`, when there is none)."""

    baseline: Baseline | None
    regressions: list[Regression]
    plot: Path
    skip_reason: str
    scaling: MachineScaling | None = None
    """How the baseline was read for this machine (None: an absolute section, compared as saved)."""

    @property
    def expected(self) -> dict[str, str]:
        if self.scaling is None:
            return {r.metric: f">= {r.minimum:.2f} (baseline {r.baseline:.2f} - {r.tolerance:.0%})"
                    for r in self.regressions}
        return {r.metric: f">= {r.minimum:.2f} ({self.scaling.describe(r.baseline, UNITS[r.metric])}; "
                          f"- {r.tolerance:.0%})" for r in self.regressions}

    @property
    def observed(self) -> dict[str, str]:
        against = "" if self.scaling is None or not self.scaling.is_scaled else " against the scaled baseline"
        return {r.metric: f"{r.observed:.2f} ({r.change:+.1%}{against})" for r in self.regressions}

    @property
    def is_ok(self) -> bool:
        return all(r.is_ok for r in self.regressions)

    @property
    def hint(self) -> str:
        if self.scaling is not None and not self.scaling.is_scaled:
            return ("a slower engine build, a changed flag, or other load; or a baseline saved on a faster machine (it "
                    "kept no calibration to scale by: refresh it with --perf-save-baseline); compare the plot")
        return "a slower engine build, a changed flag, or other load; compare the plot"

    @property
    def evidence(self) -> str:
        if self.baseline is None:
            return f"plot {self.plot}"
        cal = self.baseline.calibration
        where = "" if cal is None else (f", calibration {float(cal['steps_s']):.2f} steps/s on CPUs "
                                        f"{','.join(map(str, cal.get('cpus', [])))} of {cal.get('host') or '?'}")
        return f"baseline {self.baseline.path} ({self.baseline.saved_at}{where}); plot {self.plot}"


def calibration_invalid(host: HostWindow) -> str | None:
    """Why a calibration over `host`'s window measured contention, not the machine: a busy host, or an engine serving
    someone (it shares the CPUs with the calibration); None: valid."""
    if host.is_busy:
        return host.busy_reason
    if host.engine_cores is not None and host.engine_cores > CALIBRATION_ENGINE_CORES_MAX:
        return (f"the engine itself used {host.engine_cores:.2f} cores during the calibration (at most "
                f"{CALIBRATION_ENGINE_CORES_MAX:g} while idle): another client is using it")
    return None


def workload_for(spec: PerfSpec, endpoint: EndpointSpec, concurrency: int) -> Workload:
    """The workload of `spec` at `concurrency` (ignore_eos only where the engine honours it)."""
    return Workload(model=endpoint.model, input_len=spec.input_len, output_len=spec.output_len,
                    concurrency=concurrency, num_requests=spec.num_requests(concurrency),
                    warmup_requests=spec.warmups(concurrency), temperature=spec.temperature,
                    ignore_eos=spec.ignore_eos and adapter_class(endpoint).honours_ignore_eos)


async def wait_idle(client: httpx.AsyncClient, endpoint: str, engine: type[EngineAdapter], *,
                    timeout_s: float = IDLE_TIMEOUT_S, poll_s: float = IDLE_POLL_S) -> None:
    """Bounded wait until the engine runs and queues no request (where it says so); NotReady after
    `timeout_s`, naming what was still running and waiting."""
    deadline = time.monotonic() + timeout_s
    while True:
        counters = await read_counters(client, endpoint, engine)
        if counters is None or counters.is_idle in (None, True):
            return
        if time.monotonic() > deadline:
            raise NotReady(f"[{endpoint}] the engine still had {counters.running:.0f} running and "
                           f"{counters.waiting:.0f} waiting requests after {timeout_s:.0f} s; "
                           f"perf needs the server to itself")
        await asyncio.sleep(poll_s)


class PerfSession:
    """The session's perf runs: measured once per (section, concurrency), under the engine lock.

    `progress` receives one line per step (the plugin passes a terminal writer); `connect(endpoint,
    max_connections)` makes the async client (default: `endpoint_async_client`; self-tests pass a fake).
    """

    def __init__(self, inventory: Inventory, *, reports_dir: Path, lock_path: Path, baselines: BaselineStore,
                 save_baseline: bool = False, lock_timeout_s: float = LOCK_TIMEOUT_S,
                 progress: Callable[[str], None] = lambda line: None,
                 connect: Callable[[EndpointSpec, int], httpx.AsyncClient] | None = None,
                 host_probe: Callable[[EndpointSpec], HostLoadProbe] | None = None, judge_host_load: bool = True,
                 calibrator: Callable[[set[int]], Calibration] = calibrate,
                 log_reader: Callable[[EndpointSpec], Callable[[], str] | None] | None = None):
        self.inventory = inventory
        self.log_reader = log_reader
        """endpoint -> a read of its engine log's evidence lines (None: it declares none); read before and after a
        window where the endpoint declares speculative decoding, the acceptance's source when /metrics has none."""
        self.reports_dir = reports_dir
        self.lock_path = lock_path
        self.lock_timeout_s = lock_timeout_s
        self.baselines = baselines
        self.save_baseline = save_baseline
        self.say = progress
        self._connect = connect or (lambda endpoint, n: endpoint_async_client(endpoint, max_connections=n))
        self._wire = connect is None  # the streams go over the wire client (a fake `connect` streams itself)
        self.runs: dict[tuple[str, int], Measured] = {}
        self.failures: dict[tuple[str, int], LlmvalError] = {}
        self.sweeps: dict[tuple[str, int], list[RatePoint]] = {}
        self.agentic_runs: dict[str, AgenticMeasured] = {}
        self._probe = host_probe or (lambda endpoint: HostLoadProbe.for_endpoint(str(endpoint.base_url)))
        self.judge_host_load = judge_host_load
        """False (--perf-allow-busy-host): a busy client host is recorded and said, but the run still counts."""
        self.judged_busy: list[str] = []
        """Why each window judged anyway (--perf-allow-busy-host) was busy: every verdict of this session says so."""
        self._calibrate = calibrator
        self._gates: dict[str, Gates] = {}
        self._calibration_hosts: dict[str, HostWindow] = {}
        """The client host over each section's accepted calibration (busy only with --perf-allow-busy-host)."""

    def workload(self, spec: PerfSpec, endpoint: EndpointSpec, concurrency: int) -> Workload:
        return workload_for(spec, endpoint, concurrency)

    def get(self, spec: PerfSpec, concurrency: int) -> Measured:
        """The run of `spec` at `concurrency`, measured now unless this session already did."""
        key = (spec.label, concurrency)
        if key in self.failures:  # measured once per session, failures included: never hammer a broken server
            raise self.failures[key]
        if key not in self.runs:
            self.gates(spec)  # a machine-relative section calibrates first, while the engine is idle
            try:
                self.runs[key] = self._measure(spec, concurrency)
            except LlmvalError as error:
                self.failures[key] = error
                raise
        return self.runs[key]

    def gates(self, spec: PerfSpec) -> Gates:
        """The gates `spec`'s checks judge: its own numbers, or (with `[perf.machine]`) those numbers scaled to a
        calibration of the CPUs the engine may use on this host, made once per session before any run of it."""
        key = (spec.label, -3)  # -1: the sweep, -2: the agentic load
        if key in self.failures:
            raise self.failures[key]
        if spec.label not in self._gates:
            try:
                self._gates[spec.label] = self._derive_gates(spec)
            except LlmvalError as error:
                self.failures[key] = error
                raise
        return self._gates[spec.label]

    def _derive_gates(self, spec: PerfSpec) -> Gates:
        if spec.machine is None:
            return Gates(declared=spec, spec=spec)
        endpoint = self.inventory.endpoint(spec.endpoint)
        probe = self._probe(endpoint)
        cpus = probe.engine_cpus()
        if not cpus:
            raise MachineNotCalibrated(
                f"[{endpoint.name}] [[perf]] {spec.label} states its gates relative to this machine ([perf.machine]) "
                f"but its engine is not seen here ({probe.engine_note}): a calibration of this host says nothing "
                "about another one; give the section absolute gates, or run the suite on the engine's host")
        with engine_lock(self.lock_path, self.lock_timeout_s, self.say):
            for attempt in range(1, ATTEMPTS + 1):
                self.say(f"perf {spec.label}: calibrating this machine on CPUs {','.join(map(str, sorted(cpus)))} "
                         f"(gates relative to it, [perf.machine])")
                probe.start()
                calibration = self._calibrate(cpus)
                host = probe.stop()
                busy = self._calibration_busy(host)
                if not busy:
                    break
                self.say(f"perf {spec.label}: client host busy during the calibration, attempt {attempt} ({busy}); "
                         f"{'calibrating again' if attempt < ATTEMPTS else 'giving up'}")
            else:
                raise ClientHostBusy(f"[{endpoint.name}] the machine calibration", host, ATTEMPTS, why=busy)
        self._calibration_hosts[spec.label] = host
        factor = min(1.0, calibration.steps_s / spec.machine.reference_steps_s)
        # The floor guards a calibration judged on a busy host (--perf-allow-busy-host): its factor measures the
        # contention, not the machine. A quiet slow machine's factor is its speed, the gates scaled to it are fair.
        # Only the gates a factor scales (speeds, latencies) are at stake: a section that declares none of them (only
        # counts and shares: preemptions, KV usage) is judged the same on any machine, so it is never refused here.
        scaled = [name for name in (*SCALED_UP, *SCALED_DOWN) if getattr(spec, name) is not None]
        if factor < MIN_GATE_SCALE and scaled and host.is_busy:
            raise MachineNotCalibrated(
                f"[{endpoint.name}] [[perf]] {spec.label}: the calibration, on a busy host ({host.busy_reason}), "
                f"measured this machine at {factor:.3f} of "
                f"the reference ({calibration.steps_s:g} against {spec.machine.reference_steps_s:g} steps/s), below "
                f"the floor {MIN_GATE_SCALE:g}: its gates scaled that far ({', '.join(scaled)}; decode >= "
                f"{(spec.decode_tok_s_c1_min or 0) * factor:.3g} tok/s) would judge the host's contention, not the "
                "engine; calibrate on a quiet host (without --perf-allow-busy-host), or give absolute gates")
        gates = Gates(declared=spec, spec=scale_gates(spec, factor), factor=factor, calibration=calibration)
        folder = self.reports_dir / "perf"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{spec.label}-gates.json").write_text(
            json.dumps({**gates.as_json(), "client_host": host.as_json()}, indent=1) + "\n", encoding="utf-8")
        self.say(f"perf {spec.label}: {gates.basis}; {host.describe()}")
        return gates

    def _calibration_busy(self, host: HostWindow) -> str | None:
        """A calibration is valid only on a quiet host with an idle engine (a serving engine would slow it)."""
        if self._is_busy(host):
            return host.busy_reason
        return calibration_invalid(host) if self.judge_host_load else None

    def sweep(self, spec: PerfSpec) -> list[RatePoint]:
        """The request-rate sweep of `spec` (one Poisson run per rate), measured once, plotted in reports/."""
        key = (spec.label, -1)
        if key in self.failures:
            raise self.failures[key]
        if key not in self.sweeps:
            try:
                self.sweeps[key] = self._sweep(self.gates(spec).spec)
            except LlmvalError as error:
                self.failures[key] = error
                raise
        return self.sweeps[key]

    def agentic(self, spec: PerfSpec) -> AgenticMeasured:
        """The multi-turn agentic load of `spec` (`[perf.agentic_load]`), measured once (`_agentic_session`)."""
        key = (spec.label, -2)
        if key in self.failures:
            raise self.failures[key]
        if spec.label not in self.agentic_runs:
            try:
                self.agentic_runs[spec.label] = self._measure_agentic(spec)
            except LlmvalError as error:
                self.failures[key] = error
                raise
        return self.agentic_runs[spec.label]

    def _sweep(self, spec: PerfSpec) -> list[RatePoint]:
        endpoint = self.inventory.endpoint(spec.endpoint)
        slo = Slo(ttft_ms=spec.goodput_ttft_ms, tpot_ms=spec.goodput_tpot_ms)
        points = []
        with engine_lock(self.lock_path, self.lock_timeout_s, self.say):
            for rate in spec.request_rates:
                workload = replace(self.workload(spec, endpoint, spec.rate_max_concurrency or spec.rate_requests),
                                   num_requests=spec.rate_requests, request_rate=rate,
                                   warmup_requests=spec.warmup_requests)
                self.say(f"perf {spec.label}: sweep at {rate:g} req/s ({workload.key()}) under {self.lock_path}")
                for attempt in range(1, ATTEMPTS + 1):
                    progress = functools.partial(self._progress, f"perf {spec.label}: {rate:g} req/s attempt "
                                                                 f"{attempt}/{ATTEMPTS}")
                    run, _, host = asyncio.run(self._run(endpoint, workload, spec.metrics_interval_s, progress))
                    if not self._is_busy(host):
                        break
                    self.say(f"perf {spec.label}: client host busy at {rate:g} req/s, attempt {attempt} "
                             f"({host.busy_reason}); {'measuring again' if attempt < ATTEMPTS else 'giving up'}")
                else:
                    raise ClientHostBusy(f"[{endpoint.name}] the sweep at {rate:g} req/s", host, ATTEMPTS)
                point = RatePoint(rate=rate, run=run, goodput=goodput(run, slo), host=host)
                self.say(f"perf {spec.label}: {rate:g} req/s: goodput {point.goodput.share:.0%} ({slo.describe()}), "
                         f"output {run.metrics.output_throughput:.1f} tok/s, TTFT p99 "
                         f"{run.metrics.ttft_ms.percentiles['p99']:.0f} ms")
                points.append(point)
        folder = self.reports_dir / "perf"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{spec.label}-sweep.json").write_text(json.dumps(
            {"slo": {"ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms}, "points": [p.as_json() for p in points],
             "runs": [p.run.as_json() for p in points]}, indent=1, default=str) + "\n", encoding="utf-8")
        plot_sweep(points, slo, self.reports_dir / f"perf-{spec.label}-sweep.png",
                   title=f"{spec.label}: request-rate sweep (vllm bench serve definitions)")
        return points

    def save_baselines(self) -> list[Path]:
        """With save_baseline: store every run of this session (at its end, so this session's regression
        tests still compared with the previous baseline), with the calibration its section's gates were scaled by;
        except a run measured on a busy client host, or whose machine calibration was (judged anyway with
        --perf-allow-busy-host, it is still no reference: said, not saved)."""
        if not self.save_baseline:
            return []
        saved = []
        for (label, c), m in self.runs.items():
            busy = m.host.busy_reason
            calibration_host = self._calibration_hosts.get(label)
            if busy is None and calibration_host is not None and self._calibration(label) is not None:
                busy = calibration_invalid(calibration_host)
                busy = busy and f"during its machine calibration: {busy}"
            if busy is not None:  # judged anyway (--perf-allow-busy-host), but no reference for later runs
                self.say(f"perf baseline not saved for {label} C={c}: the client host was busy ({busy}); a busy "
                         "measurement is no reference for later runs")
                continue
            saved.append(self.baselines.save(m.run, m.identity, self._calibration(label)))
        return saved

    def _calibration(self, label: str) -> Calibration | None:
        """The calibration section `label`'s gates were scaled by this session (None: absolute gates)."""
        gates = self._gates.get(label)
        return gates.calibration if gates is not None and gates.is_relative else None

    def _measure(self, spec: PerfSpec, concurrency: int) -> Measured:
        endpoint = self.inventory.endpoint(spec.endpoint)
        workload = self.workload(spec, endpoint, concurrency)
        self.say(f"perf {spec.label}: measuring C={concurrency} ({workload.key()}) under {self.lock_path}")
        with engine_lock(self.lock_path, self.lock_timeout_s, self.say):
            for attempt in range(1, ATTEMPTS + 1):
                progress = functools.partial(self._progress, f"perf {spec.label}: C={concurrency} attempt "
                                                             f"{attempt}/{ATTEMPTS}")
                run, identity, host = asyncio.run(self._run(endpoint, workload, spec.metrics_interval_s, progress))
                if run.counters_impossible:  # the window's counters measure nothing: nor do its gates
                    self._write(spec, run, identity, host)
                    raise ImpossibleMetric(f"[{endpoint.name}] the C={concurrency} measurement: "
                                           f"{run.counters_impossible}")
                foreign = bool(run.foreign_tokens and run.foreign_tokens > 0)
                if not foreign and not self._is_busy(host):
                    break
                then = "measuring again" if attempt < ATTEMPTS else "giving up"
                if foreign:
                    self.say(f"perf {spec.label}: {run.foreign_tokens:.0f} tokens of other traffic during attempt "
                             f"{attempt}; {then}")
                else:
                    self.say(f"perf {spec.label}: client host busy during attempt {attempt} ({host.busy_reason}; "
                             f"measured, invalid: decode {run.metrics.decode_tok_s:.2f} tok/s, output "
                             f"{run.metrics.output_throughput:.2f} tok/s); {then}")
            else:
                if foreign:
                    raise OtherLoad(
                        f"[{endpoint.name}] the engine generated {run.foreign_tokens:.0f} tokens for other clients "
                        f"during each of {ATTEMPTS} measurements at C={concurrency}; perf needs the server to itself "
                        f"(stop other load, or run perf when the server is otherwise idle)")
                self._write(spec, run, identity, host)  # the invalid run's report stays, as evidence
                raise ClientHostBusy(f"[{endpoint.name}] the C={concurrency} measurement", host, ATTEMPTS)
        report = self._write(spec, run, identity, host)
        m = run.metrics
        self.say(f"perf {spec.label}: C={concurrency} decode {m.decode_tok_s:.2f} tok/s, output "
                 f"{m.output_throughput:.2f} tok/s, TTFT p99 {m.ttft_ms.percentiles['p99']:.1f} ms, "
                 f"failed {m.failed}/{m.failed + m.completed}; {host.describe()}; {report}"
                 + (f"; prompts counted by {run.prompts_counted_by}" if run.prompts_counted_by.startswith(BY_USAGE)
                    else ""))
        return Measured(run=run, identity=identity, report=report, host=host)

    def _measure_agentic(self, spec: PerfSpec) -> AgenticMeasured:
        """Measure `spec`'s agentic load once (again once when the client host was busy), write its report and plot."""
        endpoint = self.inventory.endpoint(spec.endpoint)
        profile = profile_for(spec, endpoint)
        slo = Slo(ttft_ms=spec.goodput_ttft_ms, tpot_ms=spec.goodput_tpot_ms)
        self.say(f"perf {spec.label}: agentic load ({profile.key()}) under {self.lock_path}")
        with engine_lock(self.lock_path, self.lock_timeout_s, self.say):
            for attempt in range(1, ATTEMPTS + 1):
                run, host = asyncio.run(self._run_agentic(spec, endpoint, profile))
                if not self._is_busy(host):
                    break
                self.say(f"perf {spec.label}: client host busy during the agentic load, attempt {attempt} "
                         f"({host.busy_reason}); {'measuring again' if attempt < ATTEMPTS else 'giving up'}")
            else:
                write_agentic_report(self.reports_dir, spec, run, slo, host)  # the invalid run's report stays
                raise ClientHostBusy(f"[{endpoint.name}] the agentic load", host, ATTEMPTS)
        report = write_agentic_report(self.reports_dir, spec, run, slo, host)
        plot = plot_agentic([run], self.reports_dir / f"perf-{spec.label}-agentic.png", slo=slo,
                            title=f"{spec.label}: agentic load ({profile.key()})")
        self.say(f"perf {spec.label}: agentic {len(run.turns)} turns of {profile.sessions} sessions in "
                 f"{run.duration_s:.1f} s, failed {len(run.failed)}, prefix-cache hits "
                 f"{run.prefix_cache_share()[1]}, goodput {run.goodput(slo).share:.0%} "
                 f"({slo.describe()}); {report}")
        return AgenticMeasured(run=run, slo=slo, host=host, report=report, plot=plot)

    async def _run_agentic(self, spec: PerfSpec, endpoint: EndpointSpec,
                           profile: AgenticProfile) -> tuple[AgenticRun, HostWindow]:
        engine = adapter_class(endpoint)
        probe = self._probe(endpoint)
        base_url = endpoint.root_url
        async with self._connect(endpoint, 4) as client, \
                WireClient(base_url, headers=api_key_headers(endpoint.api_key_env),
                           timeout_s=endpoint.request_timeout_s) as streamer:
            async def before_window() -> None:
                await wait_idle(client, endpoint.name, engine)
                probe.start()

            run = await run_agentic(client, streamer, profile, endpoint=endpoint.name, engine=engine,
                                    before_window=before_window, sample_interval_s=spec.metrics_interval_s)
        return run, probe.stop()

    def _is_busy(self, host: HostWindow) -> bool:
        """A busy window invalidates the run unless the session was told to judge anyway (and then says so)."""
        if host.is_busy and not self.judge_host_load:
            self.say(f"perf: client host busy ({host.busy_reason}); judged anyway (--perf-allow-busy-host)")
            self.judged_busy.append(str(host.busy_reason))
            return False
        return host.is_busy

    def _progress(self, what: str, where: str) -> None:
        self.say(f"{what}: {where}")

    async def _run(self, endpoint: EndpointSpec, workload: Workload, sample_interval_s: float | None = None,
                   progress: Callable[[str], None] | None = None) -> tuple[LoadRun, dict, HostWindow]:
        engine = adapter_class(endpoint)
        probe = self._probe(endpoint)
        read_log = self.log_reader(endpoint) if self.log_reader is not None else None
        logs: dict[str, str | None] = {}
        log_note = "" if read_log is not None else "no engine log declared (`logs`)"

        async def read_log_now(when: str) -> None:
            nonlocal log_note
            if read_log is not None and endpoint.expect.speculative is not None and not log_note:
                try:
                    logs[when] = await asyncio.to_thread(read_log)
                except LlmvalError as error:
                    log_note = f"not read {when} the window: {str(error).splitlines()[0][:200]}"

        # No recorder: perf is never replayed, and teeing every streamed chunk would load the client. The streams
        # go over the wire client (llmval.io.wire: a third of httpx's CPU per event); prompts and counters
        # over httpx.
        async with self._connect(endpoint, workload.concurrency + 2) as client:
            identity = await server_identity(client, endpoint=endpoint.name, engine=engine,
                                             base_url=endpoint.root_url,
                                             declared=endpoint.expect.model_dump(mode="json", exclude_none=True))
            streamer = WireClient(endpoint.root_url, headers=api_key_headers(endpoint.api_key_env),
                                  timeout_s=endpoint.request_timeout_s) if self._wire else None

            async def before_window() -> None:  # the host's load is read over the measured window only
                await wait_idle(client, endpoint.name, engine)
                await read_log_now("before")
                probe.start()

            try:
                run = await run_load(client, workload, endpoint=endpoint.name, engine=engine,
                                     before_window=before_window, streamer=streamer,
                                     sample_interval_s=sample_interval_s, progress=progress)
                if endpoint.expect.speculative is not None and run.engine.spec_acceptance_length is None:
                    await read_log_now("after")  # /metrics has no acceptance: the engine log's, as serving reads
                    run = replace(run, engine=with_log_acceptance(run.engine, engine, logs.get("before"),
                                                                  logs.get("after"), log_note))
            finally:
                if streamer is not None:
                    await streamer.aclose()
            return run, identity, probe.stop()

    def _write(self, spec: PerfSpec, run: LoadRun, identity: dict, host: HostWindow) -> Path:
        folder = self.reports_dir / "perf"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{spec.label}-c{run.workload.concurrency}.json"
        body = {"identity": identity, "server_key": server_key(identity), "client_host": host.as_json(),
                **run.as_json()}
        path.write_text(json.dumps(body, indent=1, default=str) + "\n", encoding="utf-8")
        return path

    def against_baseline(self, spec: PerfSpec, measured: Measured) -> BaselineCheck:
        """Compare `measured` with the stored baseline of its server identity and plot both."""
        workload_key = measured.run.workload.key()
        baseline = self.baselines.load(spec.endpoint, measured.identity, workload_key)
        c = measured.run.workload.concurrency
        scaling = None if baseline is None else machine_scaling(baseline, self._calibration(spec.label))
        plot = plot_run(measured.run, baseline, self.reports_dir / f"perf-{spec.label}-c{c}.png",
                        title=f"{spec.label} C={c} ({workload_key}) vs baseline",
                        scale=scaling.factor if scaling is not None else 1.0)
        if baseline is None:
            others = self.baselines.others(spec.endpoint, measured.identity, workload_key)
            reason = (f"no baseline for server {measured.server_key} ({workload_key}); "
                      "store one with --perf-save-baseline")
            if others:
                reason += (f"; not compared with {len(others)} baseline(s) of other server identities "
                           f"({', '.join(b.server_key for b in others)})")
            return BaselineCheck(None, [], plot, reason)
        return BaselineCheck(baseline, compare_to_baseline(measured.run, baseline, spec.baseline_tolerance, scaling),
                             plot, "", scaling)
