"""Stored baselines, one per (endpoint, server identity, workload); a run is compared only with its own.

Layout: `<root>/<endpoint>/<server_key>/<workload_key>.json`, holding the identity that produced the
key, the workload, the run's vLLM-named metrics and its per-request TTFT/TPOT (for the plot). A
baseline from another deployment (other engine version, model, KV dtype, spec config...) has another
`server_key` and is never compared; `others()` lists such baselines so a skip can say why.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ParseError
from ._engine import server_key
from ._runner import LoadRun

# Compared metrics: higher is better for both (a regression is a drop beyond the tolerance).
COMPARED = ("decode_tok_s", "output_throughput")


@dataclass(frozen=True)
class Baseline:
    path: Path
    identity: dict
    workload: dict
    metrics: dict
    saved_at: str

    @property
    def server_key(self) -> str:
        return server_key(self.identity)


@dataclass(frozen=True)
class Regression:
    """One compared metric: baseline, observed, and whether the drop is within tolerance."""

    metric: str
    baseline: float
    observed: float
    tolerance: float

    @property
    def minimum(self) -> float:
        return self.baseline * (1 - self.tolerance)

    @property
    def change(self) -> float:
        """observed / baseline − 1 (−0.12 is 12 % slower)."""
        return self.observed / self.baseline - 1 if self.baseline else 0.0

    @property
    def is_ok(self) -> bool:
        return self.observed >= self.minimum


def compare_to_baseline(run: LoadRun, baseline: Baseline, tolerance: float) -> list[Regression]:
    """The compared metrics of `run` against `baseline`, each with its verdict."""
    observed = run.metrics.as_vllm_json()
    return [Regression(m, float(baseline.metrics[m]), float(observed[m]), tolerance)
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

    def save(self, run: LoadRun, identity: dict) -> Path:
        path = self.path(run.endpoint, server_key(identity), run.workload.key())
        path.parent.mkdir(parents=True, exist_ok=True)
        data = run.as_json()
        body = {
            "saved_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "identity": identity,
            "workload": data.pop("workload"),
            "metrics": data,
        }
        path.write_text(json.dumps(body, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
        return path

    @staticmethod
    def _read(path: Path) -> Baseline | None:
        if not path.is_file():
            return None
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            return Baseline(path=path, identity=body["identity"], workload=body["workload"],
                            metrics=body["metrics"], saved_at=body.get("saved_at", "?"))
        except (ValueError, KeyError, TypeError) as error:
            raise ParseError(str(path), f"not a baseline file: {error}") from None
