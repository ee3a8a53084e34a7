"""How fast is the machine the engine runs on? A CPU calibration for gates stated relative to it.

The embedded default's perf gates (inventories/local.toml) are not a claim about a deployment but about a
healthy vLLM-on-CPU engine on *whatever machine the run is on*; absolute numbers from one box turn a slower
healthy box RED. A `[perf.machine]` table therefore states its gates at a reference calibration score, and
the run scales them by this machine's score (`scale_gates`): throughputs and rates by `factor`, latencies by
`1 / factor`, with `factor = min(1, score / reference_steps_s)` (never stricter than where they were set:
faster machines were not measured).

The calibration (`calibrate`) is the model's decode arithmetic without the engine: one step is a batch-1
matrix-vector product through every weight of a SmolLM2-135M-shaped transformer (30 layers of hidden 576,
q/k/v/o, gate/up/down of 1536, the 49152-token head), float32 through numpy's BLAS, about 540 MB of weights
read per step, so it is bound by the same memory bandwidth and cores that bound the engine's bf16 decode.
It runs in a child process pinned to the CPUs the engine may use (the affinity of every thread of its
process tree, `cpus_of`), with as many BLAS threads as those CPUs, for `seconds`; the score is steps/s at the
median step (the rate of the fastest tenth is recorded beside it). Like the engine's OMP threads,
the BLAS threads run in lockstep, so a busy host ruins it: it only counts on a quiet host (the perf session
checks the host's load over it). It is independent of the engine's health by construction: a
mis-configured engine (float32 instead of bfloat16, wrong thread binding) is as slow as before against the
same calibration, while a machine with fewer CPUs or slower memory lowers both.

    python -m llmval.load._calibrate --cpus 0 --seconds 3     # {"steps_s": 53.97, ..., "cpus": [0]}
    (measured on the 2-core CI box, 2026-12-01 15:39 UTC, other processes 0.03 cores; CPUs 0,1 at 15:37: 64.07)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from ..core.errors import LlmvalError, ParseError
from ..core.jsontext import read_json
from ..inventory import PerfSpec, scaled
from ..inventory.perf import MIN_REQUEST_RATE

HIDDEN, INTERMEDIATE, KV, LAYERS, VOCAB = 576, 1536, 192, 30, 49152
"""SmolLM2-135M-Instruct's shapes (the embedded default's model: hidden 576, 9 heads, 3 KV heads of 64)."""
BYTES_PER_STEP = 4 * (LAYERS * (HIDDEN * (2 * HIDDEN + 2 * KV + 2 * INTERMEDIATE) + INTERMEDIATE * HIDDEN)
                      + HIDDEN * VOCAB)
"""float32 weights one step reads: 538 MB."""
MAX_STEPS_S = 50e12 / BYTES_PER_STEP
"""No machine scores above this (about 93,000 steps/s): every step reads `BYTES_PER_STEP`, and 50 TB/s is ten times
the memory bandwidth of an H200's HBM, far beyond any CPU's. A score above it was not measured (a tampered file)."""
DEFAULT_SECONDS = 3.0
TIMEOUT_S = 180.0


class MachineNotCalibrated(LlmvalError):
    """Gates relative to the machine could not be derived: the engine does not run on this host, or the
    calibration did not run."""


@dataclass(frozen=True)
class Calibration:
    """A calibration of the CPUs the engine may use: decode-shaped steps per second at the median step."""

    steps_s: float
    cpus: tuple[int, ...]
    steps: int
    seconds: float
    fastest_tenth_steps_s: float | None = None

    def as_json(self) -> dict:
        fastest = None if self.fastest_tenth_steps_s is None else round(self.fastest_tenth_steps_s, 2)
        return {"steps_s": round(self.steps_s, 2), "fastest_tenth_steps_s": fastest, "cpus": list(self.cpus),
                "steps": self.steps,
                "seconds": round(self.seconds, 2),
                "workload": f"fp32 GEMV through a {LAYERS}-layer hidden-{HIDDEN} decoder and a {VOCAB}-row head"}


SCALED_UP = scaled(PerfSpec, "up")
"""Gates that are minimum rates, times the factor on a slower machine (`Scaled("up")` on the field)."""
SCALED_DOWN = scaled(PerfSpec, "down")
"""Gates that are maximum times, divided by the factor (`Scaled("down")`)."""


def scale_gates(spec: PerfSpec, factor: float) -> PerfSpec:
    """`spec` with its gates for a machine `factor` times as fast as the reference (the sweep's rates too: the
    same share of this machine's capacity is offered). Shares (goodput_min), counts (preemptions_max) and the
    workload are not machine speeds and stay as declared."""
    update: dict = {name: getattr(spec, name) * factor for name in SCALED_UP if getattr(spec, name) is not None}
    update |= {name: getattr(spec, name) / factor for name in SCALED_DOWN if getattr(spec, name) is not None}
    update["request_rates"] = [max(MIN_REQUEST_RATE, float(f"{rate * factor:.3g}")) for rate in spec.request_rates]
    return spec.model_copy(update=update)


@dataclass(frozen=True)
class Gates:
    """The gates a run judges: the inventory's (absolute), or scaled to this machine's calibration."""

    declared: PerfSpec
    spec: PerfSpec
    """The gates in force (equal to `declared` when absolute)."""
    factor: float = 1.0
    calibration: Calibration | None = None

    @property
    def is_relative(self) -> bool:
        return self.declared.machine is not None

    @property
    def basis(self) -> str:
        """What the gates mean, for verdicts and the terminal."""
        if not self.is_relative or self.calibration is None:
            return "absolute gates (the inventory's numbers)"
        machine = self.declared.machine
        return (f"gates relative to this machine: the inventory's x {self.factor:.3f} (calibration "
                f"{self.calibration.steps_s:.2f} steps/s on CPUs {','.join(map(str, self.calibration.cpus))}, "
                f"{machine.reference_steps_s:g} where they were set; never above 1)")

    def bound(self, name: str, unit: str, digits: int = 3) -> str:
        """`name`'s gate in force, said with its declared value where it was scaled: `>= 12.4 tok/s (20 x 0.62)`."""
        value, declared = getattr(self.spec, name), getattr(self.declared, name)
        op = ">=" if name in SCALED_UP or name.endswith("_min") else "<="
        text = f"{op} {_plain(value, digits)} {unit}".rstrip()
        if self.is_relative and name in SCALED_UP:
            text += f" ({_plain(declared, 6)} x {self.factor:.3f} for this machine)"
        elif self.is_relative and name in SCALED_DOWN:
            text += f" ({_plain(declared, 6)} / {self.factor:.3f} for this machine)"
        return text

    def as_json(self) -> dict:
        names = (*SCALED_UP, *SCALED_DOWN, "request_rates")
        return {"basis": self.basis, "factor": self.factor, "relative": self.is_relative,
                "calibration": self.calibration.as_json() if self.calibration else None,
                "reference_steps_s": self.declared.machine.reference_steps_s if self.declared.machine else None,
                "reference": self.declared.machine.reference if self.declared.machine else None,
                "declared": {n: getattr(self.declared, n) for n in names},
                "in_force": {n: getattr(self.spec, n) for n in names}}


def _measure(seconds: float) -> dict:
    """In the pinned child: the step loop (numpy imported here, after the affinity and thread count are set)."""
    import numpy as np

    def weights(rows: int, cols: int) -> np.ndarray:
        return np.full((rows, cols), 1.0 / cols, dtype=np.float32)

    layers = [[weights(HIDDEN, n) for n in (HIDDEN, KV, KV, HIDDEN, INTERMEDIATE, INTERMEDIATE)]
              + [weights(INTERMEDIATE, HIDDEN)] for _ in range(LAYERS)]
    head = weights(HIDDEN, VOCAB)
    x = np.full((1, HIDDEN), 0.5, dtype=np.float32)

    def step() -> np.ndarray:
        h = x
        for q, k, v, o, gate, up, down in layers:
            attention = h @ q
            h @ k, h @ v  # read like the engine reads them
            h = attention @ o
            h = ((h @ gate) * (h @ up)) @ down
        return h @ head

    for _ in range(2):
        step()
    times: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    return {"steps_s": 1.0 / times[len(times) // 2], "fastest_tenth_steps_s": 1.0 / times[len(times) // 10],
            "steps": len(times), "seconds": sum(times)}


def calibrate(cpus: set[int] | tuple[int, ...], *, seconds: float = DEFAULT_SECONDS,
              python: str = sys.executable, timeout_s: float = TIMEOUT_S) -> Calibration:
    """Run the calibration in a child pinned to `cpus` (BLAS threads = their number); MachineNotCalibrated
    when it does not finish or says nothing."""
    cpus = tuple(sorted(cpus))
    threads = str(len(cpus))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    command = [python, "-m", "llmval.load._calibrate", "--cpus", ",".join(map(str, cpus)), "--seconds", str(seconds)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise MachineNotCalibrated(f"the machine calibration did not finish within {timeout_s:.0f} s: {error}") \
            from error
    try:
        result = read_json(done.stdout.strip().splitlines()[-1], "the machine calibration's result")
    except (IndexError, ParseError) as error:
        raise MachineNotCalibrated(f"the machine calibration (`{' '.join(command)}`) exited {done.returncode} "
                                   f"without a result: {done.stderr.strip()[-300:]}") from error
    return Calibration(steps_s=float(result["steps_s"]), cpus=cpus, steps=int(result["steps"]),
                       seconds=float(result["seconds"]),
                       fastest_tenth_steps_s=float(result["fastest_tenth_steps_s"]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m llmval.load._calibrate", description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", required=True, help="comma-separated CPU numbers to pin the calibration to")
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS)
    args = parser.parse_args(argv)
    cpus = {int(c) for c in args.cpus.split(",")}
    os.sched_setaffinity(0, cpus)
    print(json.dumps({**_measure(args.seconds), "cpus": sorted(cpus)}))


if __name__ == "__main__":
    main()


def _plain(value: float, digits: int) -> str:
    """`value` to `digits` significant digits, never in exponent form (a gate reads `>= 73200`, not `>= 7.32e+04`)."""
    text = f"{value:.{digits}g}"
    return f"{float(text):.0f}" if "e" in text else text

