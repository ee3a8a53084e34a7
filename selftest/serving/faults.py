"""Real serving faults on the local engine: start a faulty vLLM-on-CPU engine, run the contract against it,
and (once, by hand) record that run as a REAL replay for the self-tests.

    flock /tmp/llmval-engine.lock .venv/bin/python -m selftest.serving.faults record fp8-kv

Each fault is inventories/local.toml's engine command with one change, on its own port (8343-8346), its log at
/tmp/llmval-serving-faults/<fault>.log (where selftest/data/inventories/serving-fault-<fault>.toml says).
The recording goes to selftest/data/replays/REAL-local-fault-<fault>/ with the live verdicts beside it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
LOG_DIR = Path("/tmp/llmval-serving-faults")
REPLAYS = ROOT / "selftest" / "data" / "replays"
INVENTORIES = ROOT / "selftest" / "data" / "inventories"
ENGINE_PYTHON = ROOT / ".venv-engine" / "bin" / "python"
READY_TIMEOUT_S = 300
ENGINE_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": "0-1",
              "VLLM_CACHE_ROOT": str(ROOT / ".cache/vllm"), "TORCHINDUCTOR_CACHE_DIR": str(ROOT / ".cache/inductor"),
              "XDG_CACHE_HOME": str(ROOT / ".cache/xdg")}
KILL_AFTER_ENV = "LLMVAL_SELFTEST_KILL_PGID"


@dataclass(frozen=True)
class Fault:
    """One fault: its port and how the engine's arguments differ from inventories/local.toml."""

    name: str
    port: int
    served_model_name: str = "smollm2"
    extra: tuple[str, ...] = ()
    tool_parser: bool = True
    kill_after: str = ""
    """A test node id: the engine is SIGKILLed as soon as that test finishes (the `killed` fault)."""

    def args(self) -> list[str]:
        args = [str(ENGINE_PYTHON), "-m", "vllm.entrypoints.openai.api_server",
                "--model", str(ROOT / ".cache/models/smollm2-135m-instruct"),
                "--served-model-name", self.served_model_name, "--host", "127.0.0.1", "--port", str(self.port),
                "--dtype", "bfloat16", "--max-model-len", "8192", "--enforce-eager", *self.extra]
        if self.tool_parser:
            args += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
        return args


FAULTS = {f.name: f for f in (
    Fault("wrong-model", 8343, served_model_name="glm-4.7-flash"),
    Fault("fp8-kv", 8344, extra=("--kv-cache-dtype", "fp8")),
    Fault("no-tool-parser", 8345, tool_parser=False),
    Fault("killed", 8346, kill_after="tests/serving/test_health.py::test_health_answers_200[local-vllm-8346]"),
)}


def start_engine(fault: Fault) -> subprocess.Popen:
    """Start the faulty engine in its own process group, output to its log; return once /health is 200."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_path = LOG_DIR / f"{fault.name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(fault.args(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, env={**os.environ, **ENGINE_ENV}, cwd=ROOT)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{fault.name}: engine exited {process.returncode}; the end of {log_path}:\n"
                               + _log_tail(log_path))
        try:
            if httpx.get(f"http://127.0.0.1:{fault.port}/health", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(1)
    stop_engine(process)
    raise RuntimeError(f"{fault.name}: not ready within {READY_TIMEOUT_S} s; the end of {log_path}:\n"
                       + _log_tail(log_path))


def _log_tail(path: Path, lines: int = 25) -> str:
    """The log's last lines: CI keeps only what the test printed, not the file (an engine exited 1 there, and
    the run said nothing of why)."""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def stop_engine(process: subprocess.Popen) -> None:
    """SIGTERM the engine's process group, SIGKILL what is left after 15 s."""
    for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def contract_command(fault: Fault, *, reports: Path, record: Path | None = None) -> list[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(ROOT),
               "-c", str(ROOT / "pyproject.toml"), str(ROOT / "tests" / "serving"), "-m", "smoke",
               "--inventory", str(INVENTORIES / f"serving-fault-{fault.name}.toml"), "--reports", str(reports)]
    if record is not None:
        command += ["--record", str(record)]
    if fault.kill_after:
        command += ["-p", "selftest.serving.kill_plugin"]
    return command


def record(name: str) -> Path:
    """Start the fault's engine, run the smoke contract with --record, stop the engine; the replay folder."""
    fault = FAULTS[name]
    target = REPLAYS / f"REAL-local-fault-{name}"
    for old in target.glob("*.jsonl"):
        old.unlink()
    target.mkdir(parents=True, exist_ok=True)
    reports = LOG_DIR / f"reports-{name}"
    process = start_engine(fault)
    try:
        version = httpx.get(f"http://127.0.0.1:{fault.port}/version", timeout=5).json().get("version")
        env = {**os.environ, KILL_AFTER_ENV: f"{process.pid}:{fault.kill_after}"} if fault.kill_after else None
        run = subprocess.run(contract_command(fault, reports=reports, record=target), cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=900)
    finally:
        stop_engine(process)
    results = json.loads((reports / "results.json").read_text())
    verdicts = {t["nodeid"]: t["outcome"] for t in results["tests"]}
    (target / "results-live.json").write_text(json.dumps({"tests": [
        {"nodeid": t["nodeid"], "outcome": t["outcome"], "message": t["message"][:600]} for t in results["tests"]]},
        indent=1) + "\n")
    (target / "README.md").write_text(
        f"REAL recording, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: vllm-cpu {version} on this 2-core "
        f"CPU machine, SmolLM2-135M-Instruct served by\n  {shlex.join(fault.args())}\n"
        f"contract: {shlex.join(contract_command(fault, reports=Path('<reports>'), record=Path('<this folder>')))}\n"
        f"pytest exit code {run.returncode}\n")
    print(run.stdout[-4000:])
    print(json.dumps(verdicts, indent=1))
    return target


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "record" or not set(sys.argv[2:]) <= set(FAULTS):
        sys.exit(f"usage: python -m selftest.serving.faults record <fault> [<fault> ...]; faults: {sorted(FAULTS)}")
    for name in sys.argv[2:]:
        record(name)
