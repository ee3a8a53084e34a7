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
"""

from __future__ import annotations

import datetime as dt
import json
import platform
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ParseError
from ..core.files import read_regular_text
from ..core.jsontext import read_json
from ._calibrate import Calibration
from ._engine import server_key
from ._runner import LoadRun

# Compared metrics: higher is better for both (a regression is a drop beyond the tolerance).
COMPARED = ("decode_tok_s", "output_throughput")
UNITS = {"decode_tok_s": "tok/s", "output_throughput": "tok/s"}


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
    return MachineScaling(now_steps_s=calibration.steps_s, then_steps_s=baseline.calibration_steps_s)


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
    verdict."""
    observed = run.metrics.as_vllm_json()
    scale = scaling.factor if scaling is not None else 1.0
    return [Regression(m, float(baseline.metrics[m]), float(observed[m]), tolerance, scale)
            for m in COMPARED if m in baseline.metrics]


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
            calibration = body.get("calibration")  # absent in files saved before baselines kept it
            if calibration is not None and not float(calibration["steps_s"]) > 0:
                raise ValueError(f"calibration steps_s {calibration['steps_s']!r} is not a positive score")
            return Baseline(path=path, identity=body["identity"], workload=body["workload"],
                            metrics=body["metrics"], saved_at=body.get("saved_at", "?"), calibration=calibration)
        except ParseError as error:
            raise ParseError(str(path), f"not a baseline file: {error.reason}") from None
        except (ValueError, KeyError, TypeError, OSError) as error:
            raise ParseError(str(path), f"not a baseline file: {error}") from None
