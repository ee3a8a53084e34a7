"""Calibrating the suite's perf instruments: a reference stream source with known truth, and the benches.

`Schedule`/`CalibrationSource` (`_source`) serve OpenAI-compatible streams with exactly known TTFT, chunk
interval and tokens per chunk; `python -m llmval bench` measures that source (or the local engine) with
the suite's load generator and with `vllm bench serve` side by side, and finds each client's ceiling
(the event rate where its measured ITL departs from the truth). `main(argv)` is that command.

    with source_process(Schedule(ttft_s=0.2, interval_s=0.02, tokens_per_chunk=3)) as base_url:
        ...  # point any OpenAI client at base_url
"""

from ._cli import main
from ._source import CalibrationSource, Lateness, Schedule, Truth, source_process
from ._vllm import VllmBenchFailed

__all__ = [
    "CalibrationSource",
    "Lateness",
    "Schedule",
    "Truth",
    "VllmBenchFailed",
    "main",
    "source_process",
]
