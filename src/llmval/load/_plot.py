"""A picture of a run against its baseline: headline numbers side by side, and per-request latencies."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display, ever: plots are files in reports/
import matplotlib.pyplot as plt

from ._baseline import Baseline
from ._runner import LoadRun

HEADLINE = (("decode_tok_s", "decode tok/s"), ("output_throughput", "output tok/s"),
            ("p99_ttft_ms", "TTFT p99 (ms)"), ("median_tpot_ms", "TPOT median (ms)"))


def plot_run(run: LoadRun, baseline: Baseline | None, path: Path, *, title: str) -> Path:
    """Write a PNG: headline metrics (this run vs baseline) and per-request TTFT / TPOT."""
    now = run.metrics.as_vllm_json()
    base = baseline.metrics if baseline is not None else {}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    names = [label for _, label in HEADLINE]
    x = range(len(HEADLINE))
    axes[0].bar([i - 0.2 for i in x], [float(base.get(k, 0) or 0) for k, _ in HEADLINE], width=0.4,
                label=f"baseline ({baseline.saved_at})" if baseline else "no baseline", color="#999999")
    axes[0].bar([i + 0.2 for i in x], [float(now[k]) for k, _ in HEADLINE], width=0.4, label="this run",
                color="#1f77b4")
    axes[0].set_xticks(list(x), names, rotation=15)
    axes[0].legend(fontsize=8)
    axes[0].set_title("headline (vllm bench serve definitions)")
    for ax, key, label in ((axes[1], "ttfts", "TTFT (ms)"), (axes[2], "tpots", "TPOT (ms)")):
        mine = [v * 1000 for v in (getattr(r, "ttft_s" if key == "ttfts" else "tpot_s") for r in run.records)
                if v is not None]
        ax.plot(range(len(mine)), mine, "o-", label="this run", color="#1f77b4")
        if base.get(key):
            theirs = [v * 1000 for v in base[key] if v is not None]
            ax.plot(range(len(theirs)), theirs, "s--", label="baseline", color="#999999")
        ax.set_xlabel("request #")
        ax.set_title(label)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
