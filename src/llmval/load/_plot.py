"""A picture of a run against its baseline: headline numbers side by side, and per-request latencies."""

from __future__ import annotations

from pathlib import Path

from ._baseline import COMPARED, Baseline
from ._runner import LoadRun
from ._sampler import EngineSamples

HEADLINE = (("decode_tok_s", "decode tok/s"), ("output_throughput", "output tok/s"),
            ("p99_ttft_ms", "TTFT p99 (ms)"), ("median_tpot_ms", "TPOT median (ms)"))


def _pyplot():
    """matplotlib's pyplot on the Agg backend (no display, ever: plots are files in reports/), imported when a plot
    is drawn: imported with the plugin, it cost every run its import and added 30 loggers (matplotlib's, PIL's,
    fontTools') that pytest's log capture walks at each phase of each test (issue 35.1)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path, title: str) -> Path:
    """Title `fig`, lay it out, write it to `path` (its folder made) as a PNG in reports/, and free it."""
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    _pyplot().close(fig)
    return path


def plot_run(run: LoadRun, baseline: Baseline | None, path: Path, *, title: str, scale: float = 1.0) -> Path:
    """Write a PNG: headline metrics (this run vs baseline) and per-request TTFT / TPOT. `scale`: the machine scaling
    the compared metrics were judged with (the baseline's `COMPARED` numbers drawn times it; 1: as saved)."""
    now = run.metrics.as_vllm_json()
    base = dict(baseline.metrics) if baseline is not None else {}
    for key in COMPARED if scale != 1.0 else ():
        if base.get(key) is not None:
            base[key] = float(base[key]) * scale
    samples = run.engine_samples if run.engine_samples is not None and run.engine_samples.count else None
    fig, axes = _pyplot().subplots(1, 4 if samples else 3, figsize=(20 if samples else 15, 4.2))
    names = [label for _, label in HEADLINE]
    x = list(range(len(HEADLINE)))
    # each metric relative to the baseline (1.0 = same), absolute values written on the bars
    ref = [float(base.get(k) or now[k] or 1) for k, _ in HEADLINE]
    mine = [float(now[k]) / r if r else 0 for (k, _), r in zip(HEADLINE, ref, strict=True)]
    if baseline is not None:
        axes[0].bar([i - 0.2 for i in x], [1.0] * len(x), width=0.4, color="#999999",
                    label=f"baseline ({baseline.saved_at})"
                          + (f", tok/s x{scale:.2f} for this machine" if scale != 1.0 else ""))
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
    if samples:
        plot_engine_samples(axes[3], samples)
    return save_figure(fig, path, title)


def plot_engine_samples(ax, samples: EngineSamples) -> None:
    """The engine's sampled requests (running, waiting: left axis) and KV-cache usage (right axis) over the window,
    with the window's preemptions and prefix-cache hit rate in the title."""
    for key, style in (("running", "o-"), ("waiting", "s-")):
        if key in samples.gauges:
            ax.plot(samples.times_s, [v if v is not None else float("nan") for v in samples.gauges[key]], style,
                    label=f"{key} ({samples.names[key]})", markersize=3)
    ax.set_xlabel(f"s into the window (every {samples.interval_s:g} s)")
    ax.set_ylabel("requests")
    if "kv_cache_usage" in samples.gauges:
        right = ax.twinx()
        right.plot(samples.times_s, [v * 100 if v is not None else float("nan")
                                     for v in samples.gauges["kv_cache_usage"]], "^--", color="#d62728",
                   label="KV cache used (%)", markersize=3)
        right.set_ylabel("KV cache used (%)")
        right.set_ylim(0, 105)
        right.legend(fontsize=7, loc="upper right")
    summary = samples.summary()
    notes = [f"preemptions {summary['preemptions']:g}" if summary.get("preemptions") is not None else "",
             f"prefix hits {summary['prefix_cache_hit_rate']:.0%}" if summary.get("prefix_cache_hit_rate") is not None
             else ""]
    ax.set_title("engine /metrics: " + (", ".join(n for n in notes if n) or f"{samples.count} samples"), fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
