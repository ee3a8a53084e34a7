"""What an engine log's reader keeps (engine knowledge), and where the `--launch` step's log is.

The line shapes the engine-log read selects (`STARTUP_LINES`, `PERIODIC_LINES`: SGLang's `Decode batch.` every
~0.44 s while decoding, vLLM's `Engine 000: ... KV cache usage` every 10 s) and where one engine start begins
(`START_MARKERS`) live here, beside the parsers that read those lines (`logs.py`). The commands that read a log
are declared with every other host read, in `llmval.hostfacts.engine_log` (`log_command`, `log_reader`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..inventory import Inventory
from .logs import DEATH_LINES, PLACEMENT_STALL_LINES

# Every startup line shape engines/logs.py parses; keep in sync with its regexes.
STARTUP_LINES = (
    "non-default args|Initializing a V1 LLM engine|fp8|FP8|KV cache|KV Cache|kv_cache|attention backend|"
    " backend\\.|RayWorkerWrapper|Custom allreduce|tool choice|server_args=|max_total_num_tokens=|"
    "world_size=[0-9]+, local_world_size="
)
# Lines an engine prints over and over while it serves: kept apart, only the last few.
PERIODIC_LINES = "Decode batch\\.|Prefill batch\\.|Engine [0-9]+: Avg prompt throughput|SpecDecoding metrics"
# Where one engine start begins in a file that holds several (a log appended across restarts).
START_MARKERS = "non-default args: \\{|server_args=ServerArgs\\("
EVIDENCE_LINES = f"{STARTUP_LINES}|{PERIODIC_LINES}"  # every line shape the reader keeps
MAX_LINES = 3000
MAX_PERIODIC_LINES = 50
# Lines in which an engine says it failed (read only when its server does not answer): vLLM's `ERROR` records and
# the exception they end with (`vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue`, `Engine
# core proc EngineCore_DP0 died unexpectedly`), SGLang's `Scheduler hit an exception` / `Received sigquit from a
# child process`, Python's own `Traceback` and `...Error:` lines, the kernel's `Killed`.
# Each engine's death lines (`logs.DEATH_LINES`: SGLang's `crashed with exit code` and `SIGQUIT received`, which its
# logger writes with no level name; vLLM's `MPClient: engine core exited unexpectedly`, a WARNING) are kept too. Not
# `sigquit`: it matched `custom_sigquit_handler` in SGLang's startup line (`custom_sigquit_handler=None`).
ERROR_LINES = ("ERROR|CRITICAL|Traceback|Error:|Exception|exception|died|Killed|killed|SIGKILL|SIGSEGV|"
               "Segmentation fault|core dumped|out of memory|" + "|".join(DEATH_LINES))
MAX_ERROR_LINES = 40
# Lines in which vLLM under Ray says it cannot get its GPUs (vllm/v1/executor/ray_utils.py,
# `logs.PLACEMENT_STALL_LINES`):
# `No current placement group found. Creating a new placement group.`, `Waiting for creating a placement group of
# specs for 10 seconds. specs=[...]` (INFO, repeated with backoff until PG_WAIT_TIMEOUT), `Cannot provide a placement
# group of ...`, `The number of required GPUs exceeds the total number of available GPUs in the placement group.` and
# `tensor_parallel_size=2 is bigger than a reserved number of GPUs (1 GPUs) in a node ...` (WARNING): none is an
# error line, yet while they are the last words the engine never comes up. The error read keeps them in its window
# (the last MAX_STALL_LINES of them, apart from the MAX_ERROR_LINES error lines, so a traceback never pushes them out).
STALL_LINES = "|".join(PLACEMENT_STALL_LINES)
MAX_STALL_LINES = 20
LOG_KINDS = ("file", "journal", "docker", "launch")


def _slug(text: str) -> str:
    """The file-name form of a launch step name (as llmval.launch names its logs)."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:40].strip("-") or "step"


def launch_log_path(step_name: str, reports_dir: Path) -> str:
    """The log of a `--launch` background step, relative to the working directory when it is below it. The link
    `--launch` keeps there is named, not followed: it is the latest launch's log whenever the read runs, and a
    recording names the link, not one run's folder (`reports/launch/<run>/`)."""
    path = Path(os.path.abspath(reports_dir / "launch" / f"start-{_slug(step_name)}.log"))
    try:
        return os.path.relpath(path) if Path.cwd() in path.parents else str(path)
    except ValueError:
        return str(path)


def launch_log_of(inventory: Inventory, reports_dir: Path) -> str | None:
    """The log of the inventory's first background launch step (what `--launch` links under `reports_dir`),
    or None when the inventory launches nothing in the background."""
    launch = inventory.launch
    steps = [s for s in (launch.start if launch else []) if s.background]
    return launch_log_path(steps[0].name or steps[0].run[:60], reports_dir) if steps else None
