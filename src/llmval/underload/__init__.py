"""Correctness under load: do answers stay right while the engine is busy at its measured concurrency?

No public perf tool checks this. Sampled NIAH cells and tool-call catalogue cases (`probes`) are asked at
temperature 0 with the engine idle, again while a closed-loop load (`hold`) keeps it at C streams in flight,
and idle once more; `compare` judges each probe's answer under load against its idle answers and each gate
`perf.correctness.*` over the probes (what "unchanged" means is decided there); `run` does the three passes
under the engine lock and writes the JSON report. The perf plugin's fixture (`fixtures/perf.py`) and
`python -m llmval bench --correctness-under-load` (`cli`) both call `measure`.

    run = measure(endpoint, perf_spec, lock_path=lock, reports_dir=Path("reports"))
    run.gate("perf.correctness.niah").outcome      # held | broken | could_not_check | not_sampled
"""

from .compare import (
    CRITERIA,
    HELD_SHARE,
    Criterion,
    GateResult,
    NotJudged,
    ProbeJudgement,
    ProbeSample,
    judge_gate,
    judge_probe,
)
from .hold import Interval, LoadHold, Window, mean_in_flight
from .probes import NiahProbe, Probe, ProbeAnswer, ToolCallProbe, niah_probes, tool_probes
from .run import CorrectnessRun, measure, measure_async

__all__ = [
    "CRITERIA",
    "HELD_SHARE",
    "CorrectnessRun",
    "Criterion",
    "GateResult",
    "Interval",
    "LoadHold",
    "NiahProbe",
    "NotJudged",
    "Probe",
    "ProbeAnswer",
    "ProbeJudgement",
    "ProbeSample",
    "ToolCallProbe",
    "Window",
    "judge_gate",
    "judge_probe",
    "mean_in_flight",
    "measure",
    "measure_async",
    "niah_probes",
    "tool_probes",
]
