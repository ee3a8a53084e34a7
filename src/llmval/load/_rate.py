"""Request-rate runs: goodput under latency SLOs, and a sweep over rates.

The arrivals of a rate run are Poisson (`_arrivals.poisson_offsets`, as `vllm bench serve --request-rate R`
draws them). Goodput is DistServe's (and vLLM's `--goodput`): a request counts when it
succeeded and its TTFT and TPOT are within the SLOs; `share` is the fraction of all requests sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._request import RequestRecord
from ._runner import LoadRun

if TYPE_CHECKING:
    from ._hostload import HostWindow


@dataclass(frozen=True)
class Slo:
    """Latency objectives per request (ms); None: not constrained."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None

    def is_met(self, record: RequestRecord) -> bool:
        if not record.success:
            return False
        if self.ttft_ms is not None and record.ttft_s * 1000 > self.ttft_ms:
            return False
        tpot = record.tpot_s
        return self.tpot_ms is None or (tpot is not None and tpot * 1000 <= self.tpot_ms)

    def describe(self) -> str:
        parts = [f"TTFT <= {self.ttft_ms:g} ms" if self.ttft_ms is not None else "",
                 f"TPOT <= {self.tpot_ms:g} ms" if self.tpot_ms is not None else ""]
        return " and ".join(p for p in parts if p) or "no SLO"


@dataclass(frozen=True)
class Goodput:
    met: int
    total: int
    duration_s: float

    @property
    def share(self) -> float:
        """Fraction of the requests sent that succeeded within the SLOs."""
        return self.met / self.total if self.total else 0.0

    @property
    def request_goodput(self) -> float:
        """vLLM's `request_goodput`: requests within the SLOs per second of the run."""
        return self.met / self.duration_s if self.duration_s > 0 else 0.0


def goodput(run: LoadRun, slo: Slo) -> Goodput:
    return Goodput(met=sum(slo.is_met(r) for r in run.records), total=len(run.records),
                   duration_s=run.metrics.duration)


@dataclass
class RatePoint:
    """One rate of a sweep: the run and its goodput."""

    rate: float
    run: LoadRun
    goodput: Goodput
    host: HostWindow | None = None
    """The client host's load over this rate's window."""

    def as_json(self) -> dict:
        m = self.run.metrics
        return {"request_rate": self.rate, "goodput_share": self.goodput.share,
                "request_goodput": self.goodput.request_goodput, "request_throughput": m.request_throughput,
                "output_throughput": m.output_throughput, "median_ttft_ms": m.ttft_ms.median,
                "p99_ttft_ms": m.ttft_ms.percentiles.get("p99"), "median_tpot_ms": m.tpot_ms.median,
                "p99_tpot_ms": m.tpot_ms.percentiles.get("p99"), "failed": m.failed, "completed": m.completed,
                "workload": self.run.workload.key(),
                "client_host": self.host.as_json() if self.host is not None else None}


def plot_sweep(points: list[RatePoint], slo: Slo, path: Path, *, title: str) -> Path:
    """Throughput, latency and goodput against the offered request rate (a PNG in reports/)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ._plot import save_figure

    rates = [p.rate for p in points]
    data = [p.as_json() for p in points]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    axes[0].plot(rates, [d["output_throughput"] for d in data], "o-", label="output tok/s")
    axes[0].set_ylabel("output tok/s")
    twin = axes[0].twinx()
    twin.plot(rates, [d["request_throughput"] for d in data], "s--", color="#999999", label="completed req/s")
    twin.set_ylabel("req/s")
    axes[0].set_title("throughput")
    for key, label, style in (("median_ttft_ms", "TTFT median", "o-"), ("p99_ttft_ms", "TTFT p99", "o--"),
                              ("median_tpot_ms", "TPOT median", "s-"), ("p99_tpot_ms", "TPOT p99", "s--")):
        axes[1].plot(rates, [d[key] for d in data], style, label=label)
    for value, label in ((slo.ttft_ms, "TTFT SLO"), (slo.tpot_ms, "TPOT SLO")):
        if value is not None:
            axes[1].axhline(value, color="#cc0000", linewidth=0.8, linestyle=":")
            axes[1].annotate(label, (rates[0], value), fontsize=7, color="#cc0000")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("ms")
    axes[1].legend(fontsize=8)
    axes[1].set_title("latency")
    axes[2].plot(rates, [d["goodput_share"] * 100 for d in data], "o-", color="#2ca02c")
    axes[2].set_ylim(0, 105)
    axes[2].set_ylabel("% of requests within SLO")
    axes[2].set_title(f"goodput\n({slo.describe()})", fontsize=9)
    for ax in axes:
        ax.set_xlabel("offered request rate (req/s, Poisson)")
    return save_figure(fig, path, title)
