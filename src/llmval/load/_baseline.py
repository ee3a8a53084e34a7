"""Stored baselines, one per (endpoint, server identity, workload); a run is compared only with its own.

Layout: `<root>/<endpoint>/<server_key>/<workload_key>.json`, holding the identity that produced the
key, the workload, the run's vLLM-named metrics and its per-request TTFT/TPOT (for the plot). A
baseline from another deployment (other engine version, model, KV dtype, spec config...) has another
`server_key` and is never compared; `others()` lists such baselines so a skip can say why.

A baseline saved by a section whose gates are relative to the machine (`[perf.machine]`) also keeps the
session's calibration (`calibration`: steps/s, CPUs, host). Compared on a machine-relative section, its
metrics are scaled by the same rule as the gates, `min(1, score now / score then)` (`MachineScaling`): a
baseline saved on a faster machine, or on this one while it was faster, does not make a healthy run on a
slower one a regression, and none gets stricter than it was saved. A baseline without a calibration (saved
before baselines kept one, or by an absolute section) is compared unscaled, and the verdict says so.

A baseline is a file anyone can edit, so it is validated on read (`BaselineInvalid`, naming the file) and never
taken on trust: it lies where its contents say (its identity hashes to its folder, its workload is its file name,
its run is its endpoint's, its model one the identity serves, its sampled engine the identity's: a file copied
from a slower deployment's folder, or its identity edited to match, is no baseline here); every compared
metric present, finite and >= 0 (0: not measured, never compared; one at least measured) and agreeing with the
numbers it is derived from (decode tok/s = 1000 / median TPOT, output throughput = output tokens / duration,
and those of its per-request TPOTs and output lengths, as this suite saves them); a
calibration finite, > 0 and below what any machine scores (`MAX_STEPS_S`); and, compared on a machine-relative
section, a calibration at most `MAX_CALIBRATION_RATIO` times this machine's own. A negative, zero or 1e300
number would otherwise turn the gate into `>= -800` or scale the baseline to nothing, and any regression GREEN.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import platform
import statistics
from dataclasses import dataclass
from pathlib import Path

from ..core.contract import shorten
from ..core.errors import ParseError
from ..core.files import read_regular_text
from ..core.jsontext import read_json
from ._calibrate import MAX_STEPS_S, Calibration
from ._engine import server_key
from ._runner import LoadRun, Workload

# Compared metrics: higher is better for both (a regression is a drop beyond the tolerance).
COMPARED = ("decode_tok_s", "output_throughput")
UNITS = {"decode_tok_s": "tok/s", "output_throughput": "tok/s"}
CONSISTENT_WITHIN = 0.01
"""How far a compared metric may be from the value its own file's numbers give (rounding of the JSON aside, this
suite saves them equal)."""
MAX_CALIBRATION_RATIO = 2.0
"""A baseline's calibration at most this many times this machine's: the scaling corrects the drift of one
deployment's machine (the 1-CPU pin of the 2-core CI box scored 0.84-0.89 of both CPUs), it does not turn a
baseline from a machine over twice as fast into a reference here (a 5x regression would hide under the cut)."""


class BaselineInvalid(ParseError):
    """A stored baseline that this suite could not have saved (a number out of its range, or contradicting the
    numbers it derives from): refused, naming the file, never compared."""

    def __init__(self, path: Path, reason: str):
        super().__init__(str(path), f"refused as a baseline: {reason}; delete it, or store a new one with "
                                    "--perf-save-baseline")


def _number(value: object) -> float | None:
    """`value` as a float when it is a JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _positive(value: object) -> bool:
    number = _number(value)
    return number is not None and math.isfinite(number) and number > 0


def _non_negative(value: object) -> bool:
    number = _number(value)
    return number is not None and math.isfinite(number) and number >= 0


def _metric_problems(metrics: dict) -> list[str]:
    """What is wrong with a baseline's compared metrics (empty: each present, finite, >= 0 and as its own numbers
    give, one at least > 0). A 0 is a metric the run did not measure (decode tok/s of a run whose median TPOT is 0,
    vLLM's rule): never compared (`compare_to_baseline`), so it holds nothing."""
    problems = [f"{name} is missing" if name not in metrics else f"{name} {metrics[name]!r} is not a finite number >= 0"
                for name in COMPARED if name not in metrics or not _non_negative(metrics[name])]
    if problems:
        return problems
    derived: dict[str, tuple[float, str]] = {}
    if _non_negative(tpot := metrics.get("median_tpot_ms")):
        derived["decode_tok_s"] = (1000 / float(tpot) if float(tpot) > 0 else 0.0, f"1000 / median_tpot_ms {tpot!r}")
    tokens, duration = metrics.get("total_output_tokens"), metrics.get("duration")
    if _non_negative(tokens) and _positive(duration):
        derived["output_throughput"] = (float(tokens) / float(duration),
                                        f"total_output_tokens {tokens!r} / duration {duration!r} s")
    for name in COMPARED:
        if name not in derived:
            sources = "median_tpot_ms" if name == "decode_tok_s" else "total_output_tokens, duration"
            problems.append(f"{name} {metrics[name]!r} cannot be checked: {sources} missing or out of range")
            continue
        value, said = derived[name]
        if abs(float(metrics[name]) - value) > CONSISTENT_WITHIN * value:
            problems.append(f"{name} {metrics[name]!r} contradicts {said} = {value:.2f}")
    problems += _per_request_problems(metrics)
    if not problems and not any(float(metrics[name]) > 0 for name in COMPARED):
        problems.append(f"it measured nothing ({', '.join(f'{name} 0' for name in COMPARED)})")
    return problems


def _per_request_problems(metrics: dict) -> list[str]:
    """Where the file keeps its per-request lists (as every baseline this suite saves), the summary numbers must be
    theirs: the median TPOT of the requests' TPOTs, the output tokens of the successful requests."""
    problems = []
    tpots, median = metrics.get("tpots"), metrics.get("median_tpot_ms")
    if isinstance(tpots, list) and _non_negative(median):
        each = [float(t) * 1000 for t in tpots if _non_negative(t)]
        value = statistics.median(each) if each else 0.0
        if abs(float(median) - value) > CONSISTENT_WITHIN * value:
            problems.append(f"median_tpot_ms {median!r} contradicts the median of its {len(each)} requests' TPOTs "
                            f"= {value:.2f}")
    outputs, errors, total = metrics.get("output_lens"), metrics.get("errors"), metrics.get("total_output_tokens")
    if isinstance(outputs, list) and isinstance(errors, list) and len(outputs) == len(errors) and _non_negative(total):
        value = sum(float(n) for n, error in zip(outputs, errors, strict=True) if not error and _non_negative(n))
        if float(total) != value:
            problems.append(f"total_output_tokens {total!r} contradicts the sum of its successful requests' "
                            f"output_lens = {value:.0f}")
    return problems


def _place_problems(path: Path, baseline: Baseline) -> list[str]:
    """What the file says against where it lies (`<endpoint>/<server_key>/<workload_key>.json`): its identity is
    another deployment's, its workload another's, its run another endpoint's. The store finds a baseline by its
    place alone, so a file copied from another deployment's folder (a slower one: every regression GREEN) would be
    compared as this one's; the suite saves each where its contents say."""
    problems = []
    if not isinstance(baseline.identity, dict) or server_key(baseline.identity) != path.parent.name:
        key = server_key(baseline.identity) if isinstance(baseline.identity, dict) else "none"
        problems.append(f"its identity hashes to {key}, not the folder {path.parent.name} it lies in (a baseline of "
                        "another deployment, moved or edited)")
    workload = baseline.workload
    try:
        key = Workload(**workload).key() if isinstance(workload, dict) else None
    except TypeError:
        key = None
    if key != path.stem:
        problems.append(f"its workload {shorten(json.dumps(workload, default=str), 160)} is not the workload "
                        f"{path.stem} its file name says")
    metrics = baseline.metrics if isinstance(baseline.metrics, dict) else {}
    endpoint = metrics.get("endpoint")
    if endpoint != path.parent.parent.name:
        problems.append(f"its run is of endpoint {endpoint!r}, not {path.parent.parent.name!r} whose folder it lies in")
    # an identity edited to match this deployment's, over another's run: the parts of the run that repeat it
    identity = baseline.identity if isinstance(baseline.identity, dict) else {}
    if "endpoint" in identity and identity["endpoint"] != endpoint:
        problems.append(f"its identity names endpoint {identity['endpoint']!r}, its run {endpoint!r}")
    served = [m.get("id") for m in identity.get("models") or () if isinstance(m, dict)]
    model = workload.get("model") if isinstance(workload, dict) else None
    if served and model not in served:
        problems.append(f"its run asked for model {model!r}, which its identity does not serve ({served})")
    samples = metrics.get("engine_samples")
    sampled = samples.get("engine") if isinstance(samples, dict) else None
    if sampled is not None and "engine" in identity and sampled != identity["engine"]:
        problems.append(f"its run sampled a {sampled} engine's metrics, its identity says {identity['engine']}")
    return problems


def _calibration_problem(calibration: object) -> str | None:
    if not isinstance(calibration, dict) or "steps_s" not in calibration:
        return f"calibration {calibration!r} is not a table with steps_s"
    steps_s = calibration["steps_s"]
    if not _positive(steps_s):
        return f"calibration steps_s {steps_s!r} is not a positive score"
    if float(steps_s) > MAX_STEPS_S:
        return (f"calibration steps_s {steps_s!r} is above what any machine scores ({MAX_STEPS_S:,.0f} steps/s: "
                "every step reads 538 MB)")
    return None


@dataclass(frozen=True)
class Baseline:
    path: Path
    identity: dict
    workload: dict
    metrics: dict
    saved_at: str
    calibration: dict | None = None
    """The machine calibration of the session that saved it (`Calibration.as_json()` and `host`) when its section's
    gates were machine-relative; None for an absolute section and in files saved before baselines kept it."""

    @property
    def server_key(self) -> str:
        return server_key(self.identity)

    @property
    def calibration_steps_s(self) -> float | None:
        return None if self.calibration is None else float(self.calibration["steps_s"])


@dataclass(frozen=True)
class MachineScaling:
    """How a baseline is read on a machine-relative section: its compared metrics times `factor`,
    `min(1, now_steps_s / then_steps_s)` (1 and `then_steps_s` None: the baseline has no calibration, not scaled)."""

    now_steps_s: float
    then_steps_s: float | None

    @property
    def factor(self) -> float:
        return 1.0 if self.then_steps_s is None else min(1.0, self.now_steps_s / self.then_steps_s)

    @property
    def is_scaled(self) -> bool:
        return self.then_steps_s is not None

    def describe(self, value: float, unit: str) -> str:
        """The baseline `value` and what was made of it: `baseline 55.2 tok/s at calibration 64.1 steps/s, scaled
        x0.82 to 45.3 for this machine's 52.6`."""
        said = f"baseline {value:.1f} {unit}"
        if self.then_steps_s is None:
            return (f"{said}, not scaled: saved without a machine calibration, so it says nothing about this "
                    f"machine's {self.now_steps_s:.1f} steps/s; refresh it here with --perf-save-baseline")
        return (f"{said} at calibration {self.then_steps_s:.1f} steps/s, scaled x{self.factor:.2f} to "
                f"{value * self.factor:.1f} for this machine's {self.now_steps_s:.1f}"
                + (" (never above 1)" if self.now_steps_s > self.then_steps_s else ""))


def machine_scaling(baseline: Baseline, calibration: Calibration | None) -> MachineScaling | None:
    """The scaling of `baseline` for a run whose gates were derived from `calibration` (None: absolute gates,
    the baseline is compared as saved)."""
    if calibration is None:
        return None
    then = baseline.calibration_steps_s
    if then is not None and then > MAX_CALIBRATION_RATIO * calibration.steps_s:
        where = (baseline.calibration or {}).get("host")
        raise BaselineInvalid(baseline.path, (
            f"its calibration {then:g} steps/s{f' (host {where})' if where else ''} is {then / calibration.steps_s:.3g}"
            f" times this machine's {calibration.steps_s:.2f}, more than the {MAX_CALIBRATION_RATIO:g} a baseline of "
            f"this machine can be (scaled by it, the baseline would shrink to x{calibration.steps_s / then:.3g})"))
    return MachineScaling(now_steps_s=calibration.steps_s, then_steps_s=then)


@dataclass(frozen=True)
class Regression:
    """One compared metric: baseline, observed, and whether the drop is within tolerance."""

    metric: str
    baseline: float
    """As saved."""
    observed: float
    tolerance: float
    scale: float = 1.0
    """The machine scaling applied to `baseline` (`MachineScaling.factor`; 1: compared as saved)."""

    @property
    def reference(self) -> float:
        """The baseline for this machine: `baseline` x `scale`."""
        return self.baseline * self.scale

    @property
    def minimum(self) -> float:
        return self.reference * (1 - self.tolerance)

    @property
    def change(self) -> float:
        """observed / reference − 1 (−0.12 is 12 % slower than the baseline, as scaled for this machine)."""
        return self.observed / self.reference - 1 if self.reference else 0.0

    @property
    def is_ok(self) -> bool:
        return self.observed >= self.minimum


def compare_to_baseline(run: LoadRun, baseline: Baseline, tolerance: float,
                        scaling: MachineScaling | None = None) -> list[Regression]:
    """The compared metrics of `run` against `baseline` (times `scaling.factor` where given), each with its
    verdict; a metric the baseline did not measure (0) is not compared."""
    observed = run.metrics.as_vllm_json()
    scale = scaling.factor if scaling is not None else 1.0
    return [Regression(m, float(baseline.metrics[m]), float(observed[m]), tolerance, scale)
            for m in COMPARED if float(baseline.metrics[m]) > 0]  # 0: not measured (validated on read)


class BaselineStore:
    """Baselines under one folder (per machine by default, like pytest-benchmark's `.benchmarks/`)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, endpoint: str, key: str, workload_key: str) -> Path:
        return self.root / endpoint / key / f"{workload_key}.json"

    def load(self, endpoint: str, identity: dict, workload_key: str) -> Baseline | None:
        return self._read(self.path(endpoint, server_key(identity), workload_key))

    def others(self, endpoint: str, identity: dict, workload_key: str) -> list[Baseline]:
        """Baselines of the same endpoint and workload but another server identity (never compared)."""
        mine = server_key(identity)
        found = [self._read(p) for p in sorted((self.root / endpoint).glob(f"*/{workload_key}.json"))
                 if p.parent.name != mine]
        return [b for b in found if b is not None]

    def save(self, run: LoadRun, identity: dict, calibration: Calibration | None = None) -> Path:
        """Store `run` as the baseline of `identity`, with the session's machine `calibration` where its section's
        gates were machine-relative (and where it was measured: this host's name)."""
        path = self.path(run.endpoint, server_key(identity), run.workload.key())
        path.parent.mkdir(parents=True, exist_ok=True)
        data = run.as_json()
        body = {
            "saved_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "identity": identity,
            "workload": data.pop("workload"),
            "metrics": data,
        }
        if calibration is not None:
            body["calibration"] = {**calibration.as_json(), "host": platform.node()}
        path.write_text(json.dumps(body, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
        return path

    @staticmethod
    def _read(path: Path) -> Baseline | None:
        if not path.is_file():
            return None
        try:
            body = read_json(read_regular_text(path, 16 * 2**20), str(path), allow_nan=True)
            baseline = Baseline(path=path, identity=body["identity"], workload=body["workload"],
                                metrics=body["metrics"], saved_at=body.get("saved_at", "?"),
                                calibration=body.get("calibration"))  # absent in files saved before baselines kept it
            if not isinstance(baseline.metrics, dict):
                raise TypeError(f"metrics is {type(baseline.metrics).__name__}, not a table")
        except ParseError as error:
            raise ParseError(str(path), f"not a baseline file: {error.reason}") from None
        except (ValueError, KeyError, TypeError, OSError) as error:
            raise ParseError(str(path), f"not a baseline file: {error}") from None
        problems = _place_problems(path, baseline) + _metric_problems(baseline.metrics)
        if baseline.calibration is not None and (problem := _calibration_problem(baseline.calibration)):
            problems.append(problem)
        if problems:
            raise BaselineInvalid(path, "; ".join(problems))
        return baseline
