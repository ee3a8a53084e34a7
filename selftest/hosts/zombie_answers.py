"""The answers of the zombie-worker self-tests: GPU holders as the kernel prints them, the compute apps, the
process rows and the listening ports of a healthy vLLM and of the zombie the seeds report, and a host inventory
that declares them.

They are REAL-SHAPED, not recorded: the fuser table is the real H200 capture's
(selftest/data/real/h200x2/fuser-v-dev-nvidia.txt: `/dev/nvidia0:        root        713 F...m python3`) with
vLLM's processes in it; `VLLM::EngineCor` is what the kernel keeps of vLLM's `VLLM::EngineCore` title (15
characters, `setproctitle`); the compute-app rows are nvidia-smi's `csv,noheader,nounits` (the real capture:
`713, python3, 1634, GPU-f0ec...`) in the suite's field order (name last); /proc/net/tcp rows are the kernel's
`local_address` and `uid` columns (`00000000:1F40` is 0.0.0.0:8000). The GPU UUID is the real H200's.
The zombie is the one the issue reports: `kill -9` of the API server left `VLLM::EngineCore` with PPID 1 and
44 GiB of GPU memory."""

from __future__ import annotations

import json

UUID = "GPU-f0ecef23-efd0-da82-6386-a8d2dc688daf"  # the real H200's GPU 0 (selftest/data/real/h200x2)


API = "python3 -m vllm.entrypoints.openai.api_server --model /tmp/model --served-model-name smollm2 --port 8000"


FUSER_HEALTHY = """                     USER        PID ACCESS COMMAND
/dev/nvidia0:        root       4242 F...m VLLM::EngineCor
/dev/nvidiactl:      root       4101 F.... python3
                     root       4242 F...m VLLM::EngineCor
/dev/nvidia-uvm:     root       4242 F...m VLLM::EngineCor
"""


FUSER_ZOMBIE = """                     USER        PID ACCESS COMMAND
/dev/nvidia0:        root       4242 F...m VLLM::EngineCor
/dev/nvidiactl:      root       4242 F...m VLLM::EngineCor
/dev/nvidia-uvm:     root       4242 F...m VLLM::EngineCor
"""


APPS = f"4242, 45056, {UUID}, VLLM::EngineCore\n"


PS_ENGINE_HEALTHY = "   4242    4101     133 VLLM::EngineCore\n"


PS_ENGINE_ORPHAN = "   4242       1     207 VLLM::EngineCore\n"


PS_API = f"   4101       1     151 {API}\n"


LISTEN_HEALTHY = "00000000:1F40 0\n00000000:0016 0\n"


LISTEN_CLOSED = "00000000:0016 0\n"


ALLOWED = ["VLLM::EngineCore", "python3 -m vllm.entrypoints.openai.api_server"]


def write_replay(folder, answers: dict[str, str]) -> None:
    """A recording folder answering each command with its stdout (fuser's rc 1 where it found nothing)."""
    folder.mkdir()
    lines = [{"host": "h200", "command": command, "rc": 0 if stdout or "fuser -n" not in command else 1,
              "stdout": stdout, "stderr": "", "duration_s": 0.01, "timed_out": False}
             for command, stdout in answers.items()]
    (folder / "commands-1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


INVENTORY = """[deployment]
name = "zombie-selftest"

[[hosts]]
name = "h200"
platform = "h200"
transport = { kind = "local" }

[hosts.gpu_processes]
stack = "up"
allowed = ["VLLM::EngineCore", "python3 -m vllm.entrypoints.openai.api_server"]
cleanup_hint = "zombie workers: `kill <pid>` of the orphaned VLLM::EngineCore before restarting vLLM"

[[endpoints]]
name = "h200-vllm"
platform = "h200"
base_url = "http://127.0.0.1:8000"
engine = "vllm"
model = "smollm2"
host = "h200"
"""
