"""The run as Prometheus series, in a textfile for node_exporter's textfile collector (`--prometheus-textfile=PATH`).

Written with prometheus_client's exposition (`generate_latest`), atomically (a temp file in the same folder, then a
rename: the collector never reads half a file; `llmval.report.files.write_bytes`). Every series carries the
deployment and the run's `scope` (nightly, smoke, partial: `llmval.report.scope`; `replay` for any `--replay` run,
`series_scope`):

    llmval_check_ok{deployment,scope,check,target}             1 the check held, 0 it did not
    llmval_check_cause{deployment,scope,check,target,cause}    1 for its cause (held, broken, could-not-check, blocked)
    llmval_measurement{deployment,scope,name,target,unit}      every numeric figure the run measured
    llmval_measurement_gate{deployment,scope,name,target,unit,op}   the gate it was judged against (op: min or max)
    llmval_run_exit_status / _start_timestamp_seconds / _duration_seconds{deployment,scope}
    llmval_run_tests{deployment,scope,outcome}                 tests per outcome (error: could not check)
    llmval_run_selection{deployment,scope,selection}           1: what narrowed a partial run (-k kv_cache)

One file may hold several runs' series: a run replaces only the series of its own deployment and scope, and a
partial run (`-m`, `-k` narrower than a declared scope) replaces, of the checks and figures, only those it judged:
it never removes the series of a check it did not run. Labels hold only what the reports already show (check ids,
target names, measured names and units, all redacted when they were made: `llmval.core.verdict`); the partial
selection is redacted again here, as it is typed on a command line. A replay judged a recording, not the
deployment now: its series carry `scope="replay"`, so the README's offline GREEN run in an ops repo whose ini names a
textfile never replaces the live smoke series an alert reads (as its reports go under `reports/replay/`).

    >>> from llmval.report.results import RunResults
    >>> text = exposition(RunResults(deployment="lab", scope="smoke", exitstatus=0)).decode()
    >>> 'llmval_run_exit_status{deployment="lab",scope="smoke"} 0.0' in text
    True
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from ..core.contract import redact, visible
from ..core.errors import LlmvalError
from ..core.files import read_regular_text
from ..core.verdict import Cause
from .files import write_bytes
from .results import RunResults
from .scope import PARTIAL
from .series import CAUSE_ORDER, OUTCOMES, check_states, figures

HELP = {
    "llmval_check_ok": "1 when the llmval check held on the target in the deployment's last run of this scope, "
                       "0 when it did not (broken, could not check, or a known blocker: llmval_check_cause says which)",
    "llmval_check_cause": "1 for the cause that decided the check on the target (held, broken, could-not-check, "
                          "blocked), 0 for the others",
    "llmval_measurement": "a figure the run measured (tok/s, a pass rate, a latency) on the target, in its unit",
    "llmval_measurement_gate": "the gate the figure was judged against: op=min (at least), op=max (at most)",
    "llmval_run_exit_status": "the run's exit status: 0 GREEN, 1 contract broken, 4 usage, 5 nothing checked, "
                              "10 could not check, 11 facts not judged (llmval.report.exitcodes)",
    "llmval_run_start_timestamp_seconds": "when the run started, in seconds since the epoch",
    "llmval_run_duration_seconds": "how long the run took, in seconds",
    "llmval_run_tests": "the run's tests per outcome (failed: broken contract, error: could not check)",
    "llmval_run_selection": "1: what narrowed a partial run (its -k, -m, paths), as its status document says",
}
"""Every metric written, with its # HELP text."""
PER_CHECK = ("llmval_check_ok", "llmval_check_cause")
PER_FIGURE = ("llmval_measurement", "llmval_measurement_gate")
MAX_TEXTFILE_BYTES = 64 * 2**20
"""The largest existing textfile read back to merge (a 256-host smoke writes about 2 MB)."""
TEXTFILE_SUFFIX = ".prom"
"""node_exporter's textfile collector reads only files ending in .prom."""

Series = tuple[str, tuple[tuple[str, str], ...], float]
"""(metric, sorted labels, value): one sample of the textfile."""


class TextfileNotWritable(LlmvalError):
    """The Prometheus textfile cannot be written (its folder is missing or read-only, the path is no .prom file)."""


@dataclass(frozen=True)
class TextfileWritten:
    """What write_textfile did: the path, the series it wrote, how many of them earlier runs left, and why an
    existing file that could not be read back was replaced (empty: none was)."""

    path: Path
    series: int
    kept: int
    replaced_unreadable: str = ""


REPLAY_SCOPE = "replay"
"""The `scope` label of every `--replay` run's series, whatever it selected."""


def series_scope(results: RunResults) -> str:
    """The `scope` label of a run's series: `replay` for a replay, else the run's scope (nightly, smoke, partial).

    >>> series_scope(RunResults(scope="smoke", mode="replay")), series_scope(RunResults(scope="smoke", mode="attach"))
    ('replay', 'smoke')
    """
    return REPLAY_SCOPE if results.mode == "replay" else results.scope or "nightly"


def run_series(results: RunResults) -> list[Series]:
    """The series of one run (every metric of HELP)."""
    base = (("deployment", results.deployment), ("scope", series_scope(results)))
    out: list[Series] = []

    def add(metric: str, value: float, **labels: str) -> None:  # control characters as escapes, as in every report
        out.append((metric, tuple(sorted((*base, *((k, visible(v)) for k, v in labels.items())))), float(value)))

    for (check, target), cause in check_states(results).items():
        add("llmval_check_ok", cause == Cause.HELD, check=check, target=target)
        for each in CAUSE_ORDER:
            add("llmval_check_cause", cause == each, check=check, target=target, cause=str(each))
    for figure in figures(results):
        add("llmval_measurement", figure.value, name=figure.name, target=figure.target, unit=figure.unit)
        if figure.gate is not None:
            add("llmval_measurement_gate", figure.gate.value, name=figure.name, target=figure.target,
                unit=figure.unit, op=figure.gate.op)
    add("llmval_run_exit_status", results.exitstatus)
    add("llmval_run_start_timestamp_seconds", start_seconds(results.started))
    add("llmval_run_duration_seconds", results.duration_s)
    for outcome in (*OUTCOMES, *sorted(set(results.counts) - set(OUTCOMES))):
        add("llmval_run_tests", results.counts.get(outcome, 0), outcome=outcome)
    if results.selection:
        add("llmval_run_selection", 1, selection=redact(results.selection))
    return _unique(out)


def _unique(series: list[Series]) -> list[Series]:
    """One sample per metric and labels (a figure measured twice by one run: its last value)."""
    return list({(metric, labels): (metric, labels, value) for metric, labels, value in series}.values())


def start_seconds(started: str) -> float:
    """results.json's `started` (ISO 8601, UTC) as seconds since the epoch; 0 where it is missing or unreadable."""
    try:
        moment = dt.datetime.fromisoformat(started)
    except ValueError:
        return 0.0
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()


def kept_series(existing: list[Series], results: RunResults, mine: list[Series]) -> list[Series]:
    """Of the series a textfile holds, those this run does not replace: other deployments' and scopes', and for a
    partial run the checks and figures it did not judge."""
    deployment, scope = results.deployment, series_scope(results)
    judged = {(m, tuple(kv for kv in labels if kv[0] != "cause" and kv[0] != "op")) for m, labels, _ in mine}
    kept = []
    for metric, labels, value in existing:
        named = dict(labels)
        if named.get("deployment") != deployment or named.get("scope") != scope:
            kept.append((metric, labels, value))
        elif scope == PARTIAL and metric in (*PER_CHECK, *PER_FIGURE):
            plain = tuple(kv for kv in labels if kv[0] != "cause" and kv[0] != "op")
            family = "llmval_check_ok" if metric in PER_CHECK else "llmval_measurement"
            if (family, plain) not in judged:
                kept.append((metric, labels, value))
    return kept


def others_lines(text: str, deployment: str, scope: str) -> str:
    """`text` without the sample lines of `deployment` and `scope`, which a run of that scope (not a partial one)
    replaces whole: only the rest needs prometheus_client's parser (2.0 s for a 256-host smoke's 20,500 series on 2
    busy cores; a file that holds one deployment's one scope then parses nothing). A label pair is matched only as
    the exposition writes one, `{name="value"` or `,name="value"` with the value escaped: inside another label's
    value a `"` is written `\\"`, so no value can look like a pair."""
    pairs = [f'deployment="{_escaped(deployment)}"', f'scope="{_escaped(scope)}"']
    return "\n".join(line for line in text.split("\n")  # the exposition's one line break (a value may hold \r)
                     if not all(f"{{{pair}" in line or f",{pair}" in line for pair in pairs))


def _escaped(value: str) -> str:
    """A label value as the text exposition writes it (prometheus_client's escaping)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def parse_textfile(text: str) -> list[Series]:
    """The llmval series of a textfile (prometheus_client's parser); ValueError when it is no exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    out = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in HELP:
                out.append((sample.name, tuple(sorted(sample.labels.items())), float(sample.value)))
    return out


def exposition(results: RunResults, kept: list[Series] = (), series: list[Series] | None = None) -> bytes:
    """The text exposition of `results`' series (`series`, where already made) and the `kept` ones of earlier runs
    (prometheus_client's)."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import GaugeMetricFamily

    by_metric: dict[str, list[Series]] = {}
    for sample in _unique([*kept, *(run_series(results) if series is None else series)]):
        by_metric.setdefault(sample[0], []).append(sample)

    class _Run:
        def collect(self):
            for metric, help_text in HELP.items():
                if metric in by_metric:
                    family = GaugeMetricFamily(metric, help_text)
                    for name, labels, value in by_metric[metric]:
                        family.add_sample(name, dict(labels), value)
                    yield family

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Run())
    return generate_latest(registry)


def check_textfile_path(path: Path) -> None:
    """Refuse, before any check runs, a textfile the collector would not read or that cannot be written."""
    path = Path(path)
    if path.suffix != TEXTFILE_SUFFIX:
        raise TextfileNotWritable(f"--prometheus-textfile {path}: node_exporter's textfile collector reads only "
                                  f"*{TEXTFILE_SUFFIX} files; name it like {path.with_suffix(TEXTFILE_SUFFIX).name}")
    if not path.parent.is_dir():
        raise TextfileNotWritable(f"--prometheus-textfile {path}: the folder {path.parent} does not exist (the "
                                  "collector's --collector.textfile.directory; create it, or pass another path)")
    if path.is_dir():
        raise TextfileNotWritable(f"--prometheus-textfile {path} is a folder; name a file in it, e.g. "
                                  f"{path / 'llmval.prom'}")


def write_textfile(path: Path, results: RunResults) -> TextfileWritten:
    """Write the run's series to `path`, keeping the series of earlier runs this one does not replace (an existing
    file that is no exposition is replaced, and said so); TextfileNotWritable when it cannot be written."""
    path = Path(path)
    check_textfile_path(path)
    existing: list[Series] = []
    unreadable = ""
    scope = series_scope(results)
    if path.exists():
        try:
            text = read_regular_text(path, MAX_TEXTFILE_BYTES)
            if scope != PARTIAL:  # its own series it replaces whole: left unparsed
                text = others_lines(text, results.deployment, scope)
            existing = parse_textfile(text)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            unreadable = f"{type(error).__name__}: {error}"[:300]
    mine = run_series(results)
    kept = kept_series(existing, results, mine)
    try:
        write_bytes(path, exposition(results, kept, mine))
    except LlmvalError as error:  # ReportsNotWritable: its advice is the reports folder's (--reports), not this file's
        why = str(error).split("; pass --reports", 1)[0].replace("the reports folder", "the folder")
        raise TextfileNotWritable(f"--prometheus-textfile {path}: {why}: pass a path in a folder this user can "
                                  "write") from None
    return TextfileWritten(path, len(_unique([*kept, *mine])), len(kept), unreadable)
