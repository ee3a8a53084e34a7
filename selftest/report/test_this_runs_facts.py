"""Issue 46.3: a report lists only this run's facts. The plots of status.md and report.html are the ones written
since the run started (a `-m smoke` run listed an earlier nightly's NIAH and agentic heatmaps, even for an
inventory with no grid), and a replay states no timing as measured (`is_timing`: its answers come at the
replay's pace; the recorded kpro6 replay showed "decode_tok_s_tpot_vs_itl 551056.9 vs 231696.0")."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from llmval.core.verdict import is_timing
from llmval.report.files import plots_written_since


def test_only_the_plots_written_since_the_run_started_are_its_plots(tmp_path):
    started = dt.datetime(2026, 12, 7, 1, 0, tzinfo=dt.UTC)
    before, after = started.timestamp() - 3600, started.timestamp() + 5
    for name, when in (("niah-local.png", before), ("agentic-local.png", before), ("perf-c1-sweep.png", after),
                       ("notes.txt", after)):
        (tmp_path / name).write_bytes(b"\x89PNG")
        os.utime(tmp_path / name, (when, when))
    (tmp_path / "planted.png").symlink_to(tmp_path / "perf-c1-sweep.png")  # a link is no plot of ours
    assert plots_written_since(tmp_path, started) == ["perf-c1-sweep.png"]
    assert plots_written_since(tmp_path / "missing", started) == []


@pytest.mark.parametrize(("unit", "timing"), [
    ("ms", True), ("s", True), ("tok/s", True), ("req/s", True), ("tokens/step", False), ("fraction", False),
    ("", False), ("GiB", False),
])
def test_a_timing_is_known_by_its_unit(unit, timing):
    assert is_timing(unit) is timing
