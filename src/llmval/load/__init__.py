"""Load generation and the metric math of `vllm bench serve`, for perf gates that mean the same number.

An async httpx client streams `/v1/completions` requests (`_request`), timed exactly as vLLM times them:
TTFT at the first chunk with choices, per-chunk ITL, E2E to the last chunk, tokens from the server's
`usage`. A run (`_runner`) warms up, then sends k·C requests at concurrency C with prompts of exactly
the input length, unique per request and per run (`_prompts`, calibrated with the server's
`/tokenize`). `_stats` turns the requests into vLLM's metrics (TPOT, decode tok/s = 1000 / median
TPOT, output throughput, numpy-linear percentiles); `_engine` reads the server's identity and its
counters around the run through the engine's adapter class (speculative acceptance, other traffic);
`_baseline` stores and compares runs per server identity; `_plot` draws a run against its baseline;
`_sampler` samples the engine's /metrics through every window; `_agentic` is the multi-turn agentic load
(sessions growing turn by turn on a shared prefix); `_session` holds the measurement policy of a perf session
(`PerfSession`: lock, idle wait, one retry when other traffic was seen, reports, baseline comparison) that
the pytest plugin only wires.

    run = await run_load(client, Workload(model="smollm2", input_len=128, output_len=64,
                                          concurrency=1, num_requests=10, warmup_requests=2),
                         endpoint="local-vllm", engine=adapter_class(endpoint_spec))
    run.metrics.decode_tok_s, run.metrics.output_throughput, run.metrics.failed
"""

from ._agentic import AgenticProfile, AgenticRun, plot_agentic, run_agentic
from ._agentic_session import AgenticMeasured
from ._arrivals import poisson_offsets, vllm_offsets
from ._baseline import (
    Baseline,
    BaselineInvalid,
    BaselineStore,
    MachineScaling,
    Regression,
    compare_to_baseline,
    machine_scaling,
)
from ._calibrate import Calibration, Gates, MachineNotCalibrated, calibrate, scale_gates
from ._engine import (
    EngineCounters,
    WindowDeltas,
    read_counters,
    server_identity,
    server_key,
    window_deltas,
    with_log_acceptance,
)
from ._hostload import ClientHostBusy, HostLoadProbe, HostWindow
from ._lock import ENGINE_LOCK, engine_lock, lock_holders, say_on_stderr
from ._parallel import auto_workers, run_load_parallel
from ._prompts import Prompt, WordPrompts, build_prompt, build_prompts
from ._rate import Goodput, RatePoint, Slo, goodput, plot_sweep
from ._request import (
    RequestRecord,
    UnverifiedTokenCount,
    WireClient,
    completion_payload,
    stream_completion,
    unverified_counts,
)
from ._runner import LoadRun, OtherLoad, Workload, run_batch, run_load, sender
from ._sampler import EngineSamples, MetricsSampler
from ._session import BaselineCheck, Measured, PerfSession, wait_idle, workload_for
from ._stats import Distribution, RunMetrics, compute_metrics, max_concurrency, percentile

__all__ = [
    "ENGINE_LOCK",
    "AgenticMeasured",
    "AgenticProfile",
    "AgenticRun",
    "Baseline",
    "BaselineCheck",
    "BaselineInvalid",
    "BaselineStore",
    "Calibration",
    "ClientHostBusy",
    "Distribution",
    "EngineCounters",
    "EngineSamples",
    "Gates",
    "Goodput",
    "HostLoadProbe",
    "HostWindow",
    "LoadRun",
    "MachineNotCalibrated",
    "MachineScaling",
    "Measured",
    "MetricsSampler",
    "OtherLoad",
    "PerfSession",
    "Prompt",
    "RatePoint",
    "Regression",
    "RequestRecord",
    "RunMetrics",
    "Slo",
    "UnverifiedTokenCount",
    "WindowDeltas",
    "WireClient",
    "WordPrompts",
    "Workload",
    "auto_workers",
    "build_prompt",
    "build_prompts",
    "calibrate",
    "compare_to_baseline",
    "completion_payload",
    "compute_metrics",
    "engine_lock",
    "goodput",
    "lock_holders",
    "machine_scaling",
    "max_concurrency",
    "percentile",
    "plot_agentic",
    "plot_sweep",
    "poisson_offsets",
    "read_counters",
    "run_agentic",
    "run_batch",
    "run_load",
    "run_load_parallel",
    "say_on_stderr",
    "scale_gates",
    "sender",
    "server_identity",
    "server_key",
    "stream_completion",
    "unverified_counts",
    "vllm_offsets",
    "wait_idle",
    "window_deltas",
    "with_log_acceptance",
    "workload_for",
]
