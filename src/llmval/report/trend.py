"""The deployment's history as one static page: `llmval trend RESULTS... [--history DIR] --out DIR`.

From the runs' results files only (live runs and replays alike, any schema this llmval reads:
`llmval.report.results.readable_version` refuses the rest, naming the file), it writes `DIR/index.html` and its PNG
plots beside it:

- the runs' verdicts as a timeline (GREEN, broken, could not check, ...: the exit status of each run);
- each check that changed state (held <-> not held) between runs, with its states run by run; a check that went
  one way and back (GREEN -> RED -> GREEN, or RED -> GREEN -> RED) is named **flaky**;
- each measured figure over time against its gate (`llmval.report.series.figures`), points outside it in red.

Nothing a server, a host or the inventory said is markup here: every text goes through `html_text`, as in
report.html (`llmval.report.escape`), and the plots are images drawn by matplotlib (Agg) with the text as data.

    >>> is_flaky([Cause.HELD, Cause.BROKEN, Cause.HELD])
    True
    >>> flips([Cause.HELD, None, Cause.BROKEN])      # a run that did not judge the check is skipped over
    1
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import LlmvalError
from ..core.verdict import Cause
from .escape import html_text
from .exitcodes import ExitCode
from .files import check_reports_dir, write_report
from .results import HISTORY_DIR, RunResults, load_results, parse_results
from .scope import PARTIAL_DIR, REPLAY_DIR
from .series import Figure, check_states, figures

PAGE_FILE = "index.html"
MAX_FIGURE_PLOTS = 60
"""Figures drawn, at most (those outside their gate in some run first, then those with a gate); the page says how
many more there were."""
MAX_CHECK_ROWS = 40
"""Rows of the flipped-checks plot, at most (the flaky ones first); the table lists them all."""
STATE_COLOURS = {Cause.HELD: "#2ca02c", Cause.BLOCKED: "#9467bd", Cause.COULD_NOT_CHECK: "#ff7f0e",
                 Cause.BROKEN: "#d62728", None: "#dddddd"}
STATE_MARKS = {Cause.HELD: "✓", Cause.BLOCKED: "B", Cause.COULD_NOT_CHECK: "?", Cause.BROKEN: "✗", None: "·"}


class TrendRefused(LlmvalError):
    """The given results files cannot make one trend page (none given, several deployments, one unreadable)."""


@dataclass(frozen=True)
class Run:
    """One run's results, read from `path`."""

    path: Path
    results: RunResults
    started: dt.datetime

    @property
    def is_green(self) -> bool:
        return self.results.exitstatus == ExitCode.GREEN

    def verdict(self) -> str:
        """`GREEN`, or the exit status in words (`1 (contract broken)`)."""
        if self.is_green:
            return "GREEN"
        try:
            return ExitCode(self.results.exitstatus).describe()
        except ValueError:
            return f"exit status {self.results.exitstatus}"


@dataclass(frozen=True)
class CheckHistory:
    """One check on one target across the runs: its state in each (None: that run did not judge it)."""

    check: str
    target: str
    states: tuple[Cause | None, ...]

    @property
    def flips(self) -> int:
        return flips(self.states)

    @property
    def is_flaky(self) -> bool:
        return is_flaky(self.states)


@dataclass
class TrendPage:
    """What write_trend wrote."""

    path: Path
    plots: list[Path] = field(default_factory=list)
    flipped: list[CheckHistory] = field(default_factory=list)
    figures_left_out: int = 0

    @property
    def flaky(self) -> list[CheckHistory]:
        return [h for h in self.flipped if h.is_flaky]


def _held(states: Iterable[Cause | None]) -> list[bool]:
    return [state == Cause.HELD for state in states if state is not None]


def flips(states: Iterable[Cause | None]) -> int:
    """How often the check went from held to not held or back, over the runs that judged it."""
    held = _held(states)
    return sum(1 for a, b in itertools.pairwise(held) if a != b)


def is_flaky(states: Iterable[Cause | None]) -> bool:
    """True when the check went one way and back (held -> not -> held, or not -> held -> not)."""
    return flips(states) >= 2


def started_of(results: RunResults, path: Path) -> dt.datetime:
    """The run's start (UTC); a document without a readable one is refused, naming the file."""
    try:
        moment = dt.datetime.fromisoformat(results.started)
    except ValueError:
        raise TrendRefused(f"{path}: 'started' is {results.started!r}, not an ISO 8601 time: cannot place the run "
                           "in time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def read_runs(paths: Iterable[Path], history: Path | None = None) -> list[Run]:
    """The runs of `paths` and of `history`'s results-*.json, oldest first; TrendRefused naming a file that cannot
    be read (or a newer schema), or when they are runs of more than one deployment."""
    files = [Path(p) for p in paths]
    if history is not None:
        if not Path(history).is_dir():
            raise TrendRefused(f"--history {history} is not a folder (a reports/{HISTORY_DIR}/ folder of results "
                               "files)")
        files += sorted(Path(history).glob("results-*.json"))
    if not files and history is not None:  # after the README's replay: its runs are not the deployment's
        raise TrendRefused(f"--history {history} holds no results-*.json yet: a live run of a declared scope (-m "
                           f"smoke, the whole contract) writes one there; a replay's runs are in reports/{REPLAY_DIR}/"
                           f"{HISTORY_DIR}/ and a partial run's in reports/{PARTIAL_DIR}/{HISTORY_DIR}/ (pass that "
                           "folder to see those)")
    if not files:
        raise TrendRefused("no results files given: name them (reports/history/results-*.json) or pass --history "
                           f"reports/{HISTORY_DIR}")
    runs = []
    for path in dict.fromkeys(files):
        try:
            results = parse_results(load_results(path))
        except LlmvalError as error:
            raise TrendRefused(str(error) if str(path) in str(error) else f"{path}: {error}") from None
        runs.append(Run(path, results, started_of(results, path)))
    deployments = sorted({run.results.deployment for run in runs})
    if len(deployments) > 1:
        raise TrendRefused(f"the files hold runs of {len(deployments)} deployments ({', '.join(deployments)}): a "
                           "trend page is one deployment's; name only its files")
    return sorted(runs, key=lambda run: (run.started, run.path.name))


def check_histories(runs: list[Run]) -> list[CheckHistory]:
    """Every (check, target) any run judged, with its state in each run."""
    per_run = [check_states(run.results) for run in runs]
    keys = sorted({key for states in per_run for key in states})
    return [CheckHistory(check, target, tuple(states.get((check, target)) for states in per_run))
            for check, target in keys]


def figure_histories(runs: list[Run]) -> dict[tuple[str, str, str], list[tuple[dt.datetime, Figure]]]:
    """Each measured figure (name, target, unit) with its value and gate in each run that measured it."""
    out: dict[tuple[str, str, str], list[tuple[dt.datetime, Figure]]] = {}
    for run in runs:
        for figure in figures(run.results):
            out.setdefault(figure.key, []).append((run.started, figure))
    return out


def _pyplot():
    """matplotlib's pyplot on the Agg backend (files only, never a display), imported when a page is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    _pyplot().close(fig)
    return path


def plot_verdicts(runs: list[Run], path: Path) -> Path:
    """The runs' verdicts on a time axis: green GREEN, red broken, orange could not check, grey the rest."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 2.2))
    colours = {ExitCode.GREEN: "#2ca02c", ExitCode.CONTRACT_BROKEN: "#d62728", ExitCode.COULD_NOT_CHECK: "#ff7f0e"}
    for run in runs:
        ax.scatter([run.started], [0], s=120, marker="s", color=colours.get(run.results.exitstatus, "#7f7f7f"))
    ax.set_yticks([])
    ax.set_title("runs: green GREEN, red contract broken, orange could not check, grey other exit statuses",
                 fontsize=9)
    fig.autofmt_xdate()
    return _save(fig, path)


def plot_checks(runs: list[Run], flipped: list[CheckHistory], path: Path) -> Path:
    """The flipped checks (flaky first) run by run, one row each, coloured by state."""
    from matplotlib.colors import to_rgb

    plt = _pyplot()
    rows = sorted(flipped, key=lambda h: (not h.is_flaky, h.check, h.target))[:MAX_CHECK_ROWS]
    grid = [[to_rgb(STATE_COLOURS[state]) for state in h.states] for h in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(runs) + 4), 0.4 * len(rows) + 1.6))
    ax.imshow(grid, aspect="auto", interpolation="nearest")
    ax.set_yticks(range(len(rows)), [f"{'FLAKY ' if h.is_flaky else ''}{h.check} [{h.target}]" for h in rows],
                  fontsize=8)
    ax.set_xticks(range(len(runs)), [run.started.strftime("%m-%d %H:%M") for run in runs], rotation=45,
                  ha="right", fontsize=7)
    ax.set_title("green held, red broken, orange could not check, purple blocked, grey not run", fontsize=8)
    return _save(fig, path)


def plot_figure(key: tuple[str, str, str], points: list[tuple[dt.datetime, Figure]], path: Path) -> Path:
    """One figure over time against its gate (the gate as it was in each run), outside the gate in red."""
    plt = _pyplot()
    name, target, unit = key
    fig, ax = plt.subplots(figsize=(7, 3))
    times, values = [t for t, _ in points], [f.value for _, f in points]
    ax.plot(times, values, marker="o", color="#1f77b4", label=name)
    outside = [(t, f.value) for t, f in points if f.is_outside_gate]
    if outside:
        ax.scatter([t for t, _ in outside], [v for _, v in outside], color="#d62728", zorder=3,
                   label="outside its gate")
    gated = [(t, f.gate) for t, f in points if f.gate is not None]
    if gated:
        ax.step([t for t, _ in gated], [g.value for _, g in gated], where="post", color="#7f7f7f", linestyle="--",
                label=f"gate ({'at least' if gated[-1][1].op == 'min' else 'at most'})")
    ax.set_title(f"{name} [{target}]", fontsize=10)
    ax.set_ylabel(unit)
    ax.legend(fontsize=7, loc="best")
    fig.autofmt_xdate()
    return _save(fig, path)


def _figures_to_draw(histories: dict) -> list[tuple[tuple[str, str, str], list]]:
    """Figures in drawing order: outside their gate in some run, then gated, then the rest; by name."""
    def rank(item):
        key, points = item
        return (not any(f.is_outside_gate for _, f in points), not any(f.gate for _, f in points), key)

    return sorted(histories.items(), key=rank)


def write_trend(runs: list[Run], out_dir: Path) -> TrendPage:
    """Write `out_dir/index.html` and its plots from `runs` (oldest first)."""
    out_dir = Path(out_dir)
    check_reports_dir(out_dir, ())
    page = TrendPage(out_dir / PAGE_FILE)
    page.plots.append(plot_verdicts(runs, out_dir / "trend-verdicts.png"))
    page.flipped = [h for h in check_histories(runs) if h.flips]
    if page.flipped:
        page.plots.append(plot_checks(runs, page.flipped, out_dir / "trend-checks.png"))
    drawn = _figures_to_draw(figure_histories(runs))
    page.figures_left_out = max(0, len(drawn) - MAX_FIGURE_PLOTS)
    figure_plots = []
    for n, (key, points) in enumerate(drawn[:MAX_FIGURE_PLOTS], start=1):
        figure_plots.append((key, points, plot_figure(key, points, out_dir / f"trend-figure-{n:02d}.png")))
    page.plots.extend(p for _, _, p in figure_plots)
    write_report(page.path, render_page(runs, page, figure_plots))
    return page


def _img(path: Path, alt: str) -> str:
    return f'<img src="{html_text(path.name)}" alt="{html_text(alt)}">'


def render_page(runs: list[Run], page: TrendPage, figure_plots: list) -> str:
    """The page's HTML: every text escaped (html_text), the plots by file name beside it."""
    e = html_text
    deployment = runs[0].results.deployment
    first, last = runs[0].started.isoformat(timespec="minutes"), runs[-1].started.isoformat(timespec="minutes")
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>llmval trend: {e(deployment)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:1em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}.flaky{color:#d62728;font-weight:bold}"
        "img{max-width:100%}</style></head><body>",
        f"<h1>llmval trend: {e(deployment)}</h1>",
        f"<p>{len(runs)} runs from {e(first)} to {e(last)}; {sum(r.is_green for r in runs)} GREEN. Made by "
        "<code>llmval trend</code> from the runs' results files only.</p>",
        *([f"<p><strong>{replayed} of these runs replayed a recording</strong> (scope marked <em>replay</em>): "
           "they judged what was recorded, not the deployment as it was then.</p>"]
          if (replayed := sum(r.results.mode == "replay" for r in runs)) else []),
        '<h2 id="verdicts">Verdicts</h2>', _img(page.plots[0], "the runs' verdicts over time"),
        "<table><tr><th>started</th><th>scope</th><th>verdict</th><th>tests</th><th>file</th></tr>",
    ]
    for run in runs:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(run.results.counts.items()))
        scope = run.results.scope or "nightly"
        if run.results.selection:
            scope += f": {run.results.selection}"
        if run.results.mode == "replay":  # a recording judged, not the deployment then (reports/replay/history/)
            scope += " (replay)"
        parts.append(f"<tr><td>{e(run.started.isoformat(timespec='seconds'))}</td><td>{e(scope)}</td>"
                     f"<td>{e(run.verdict())}</td><td>{e(counts)}</td><td>{e(run.path.name)}</td></tr>")
    parts.append("</table>")
    parts.append('<h2 id="checks">Checks that changed</h2>')
    if page.flipped:
        parts.append(f"<p>{len(page.flipped)} check(s) changed state; {len(page.flaky)} went one way and back "
                     "(flaky). States run by run: ✓ held, ✗ broken, ? could not check, B blocked, · not run.</p>")
        parts.append(_img(page.plots[1], "the checks that changed, run by run"))
        parts.append("<table><tr><th>check</th><th>target</th><th>flips</th><th>states</th></tr>")
        for h in sorted(page.flipped, key=lambda h: (not h.is_flaky, h.check, h.target)):
            name = f'<span class="flaky">FLAKY</span> {e(h.check)}' if h.is_flaky else e(h.check)
            states = " ".join(STATE_MARKS[s] for s in h.states)
            parts.append(f"<tr><td>{name}</td><td>{e(h.target)}</td><td>{h.flips}</td><td>{e(states)}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No check changed state over these runs.</p>")
    parts.append('<h2 id="figures">Measured figures against their gates</h2>')
    if not figure_plots:
        parts.append("<p>These runs measured no numeric figure.</p>")
    for (name, target, unit), points, plot in figure_plots:
        latest = points[-1][1]
        gate = (f"gate: {'at least' if latest.gate.op == 'min' else 'at most'} {latest.gate.value:g} "
                f"({latest.gate.check})") if latest.gate else "no gate stated beside it"
        parts.append(f"<h3>{e(name)} [{e(target)}]</h3><p>latest {latest.value:g} {e(unit)}; {e(gate)}</p>")
        parts.append(_img(plot, f"{name} on {target} over time"))
    if page.figures_left_out:
        parts.append(f"<p>{page.figures_left_out} more figure(s) not drawn (at most {MAX_FIGURE_PLOTS}: those "
                     "outside a gate first, then those with one).</p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
