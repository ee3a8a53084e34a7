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
    x = list(range(len(HEADLINE)))
    # each metric relative to the baseline (1.0 = same), absolute values written on the bars
    ref = [float(base.get(k) or now[k] or 1) for k, _ in HEADLINE]
    mine = [float(now[k]) / r if r else 0 for (k, _), r in zip(HEADLINE, ref, strict=True)]
    if baseline is not None:
        axes[0].bar([i - 0.2 for i in x], [1.0] * len(x), width=0.4, color="#999999",
                    label=f"baseline ({baseline.saved_at})")
    bars = axes[0].bar([i + 0.2 for i in x] if baseline else x, mine, width=0.4, color="#1f77b4", label="this run")
    for bar, (k, _), r in zip(bars, HEADLINE, ref, strict=True):
        text = f"{float(now[k]):.1f}" + (f"\n(base {r:.1f})" if baseline is not None else "")
        axes[0].annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                         fontsize=7)
    axes[0].set_ylim(0, max(1.0, *mine) * 1.3)
    axes[0].set_xticks(x, names, rotation=15)
    axes[0].set_ylabel("relative to baseline" if baseline else "relative to this run")
    axes[0].legend(fontsize=8, loc="lower right")
    axes[0].set_title("headline (vllm bench serve definitions)" + ("" if baseline else ": no baseline"))
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
