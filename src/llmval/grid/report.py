"""A grid's artefacts in reports/: the grid JSON and its heatmap PNG (matplotlib, Agg backend)."""

from __future__ import annotations

import json
from pathlib import Path


def write_grid_json(document: dict, reports_dir: Path) -> Path:
    """Write reports/<artefact>-<grid>.json (artefact `niah` unless the document names another); return its path."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / f"{document.get('artefact', 'niah')}-{document['grid']}.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def render_heatmap(document: dict, reports_dir: Path) -> Path:
    """Write reports/<artefact>-<grid>.png: one panel per (variant, value kind); depth × length, pass rate.

    Other grids (the agentic one) give `artefact`, `title`, `panels` ([variant, kind] pairs) and a per-cell
    `label` in the document; NIAH documents need none of them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    lengths, depths = document["lengths"], document["depths"]
    panels = [tuple(p) for p in document["panels"]] if document.get("panels") else \
        [(v, k) for v in document["spec"]["variants"] for k in document["spec"]["values"]]
    by_cell = {(c["variant"], c["kind"], c["length"], c["depth"]): c for c in document["cells"]}
    width = max(7.0, 1.3 + 1.1 * len(lengths) * len(panels))
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 2.0 + 0.5 * len(depths)), squeeze=False)
    cmap = ListedColormap(["#d73027", "#fdae61", "#fee08b", "#a6d96a", "#1a9850"]).with_extremes(bad="#bdbdbd")
    for ax, (variant, kind) in zip(axes[0], panels, strict=True):
        grid = [[float("nan")] * len(lengths) for _ in depths]
        for i, depth in enumerate(depths):
            for j, length in enumerate(lengths):
                cell = by_cell.get((variant, kind, length, depth))
                label = "–"
                if cell is not None and cell["error"] is None and cell["pass_rate"] is not None:
                    grid[i][j] = cell["pass_rate"]
                    n = len(cell["trials"])
                    passed = round(cell["pass_rate"] * n)
                    label = cell.get("label") or \
                        (("pass" if cell["is_pass"] else "MISS") if n == 1 else f"{passed}/{n}")
                elif cell is not None:
                    label = "error"
                ax.text(j, i, label, ha="center", va="center", fontsize=8)
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(lengths)), [str(n) for n in lengths], fontsize=8)
        ax.set_yticks(range(len(depths)), [f"{round(d * 100)}%" for d in depths], fontsize=8)
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("needle depth")
        ax.set_title(f"{variant}, {kind}", fontsize=9)
    summary = document["summary"]
    gates = document.get("gates") or []
    verdict = "gates: " + ", ".join(f"{g['expected']}: {'ok' if g['ok'] else 'FAIL'}" for g in gates) \
        if gates else "gates: not judged (grid incomplete)"
    rate = summary["pass_rate"]
    title = document.get("title", "NIAH")
    fig.suptitle(f"{title} {document['grid']} ({document['model']}): "
                 f"{summary['passed']}/{summary['measured']} cells pass"
                 f"{f' ({rate:.0%})' if rate is not None else ''}\n{verdict}", fontsize=9)
    fig.tight_layout()
    path = reports_dir / f"{document.get('artefact', 'niah')}-{document['grid']}.png"
    reports_dir.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
