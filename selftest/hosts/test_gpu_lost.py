"""Causes, not shrugs (issue 12.6): a failed command's message carries the end of stdout when stderr is
empty, and a GPU that fell off the bus fails the GPU count naming nvidia-smi's own words.

nvidia-smi prints "No devices were found" (no GPU left) and "Unable to determine the device handle for GPU
0000:01:00.0: Unknown Error" (Xid 79, fell off the bus) on STDOUT with exit code 6 / 15 and nothing on
stderr (wording from the NVIDIA forums and infra.md; the exit codes are nvidia-smi's documented ones).
The replay below is SYNTHESIZED from those words.
"""

from __future__ import annotations

import json

import pytest

from llmval.core.errors import CommandFailed
from llmval.hostfacts import GPU_QUERY, HostFacts
from llmval.io.recording import CommandResult
from selftest.hosts._contract import run_hosts

pytest_plugins = ["pytester"]
LOST = {
    "no-devices": (6, "No devices were found\n"),
    "device-handle": (15, "Unable to determine the device handle for GPU 0000:01:00.0: Unknown Error\n"),
}


class _Canned:
    """A connection answering every command with one canned result."""

    name = "gpu-node"

    def __init__(self, rc: int, stdout: str, stderr: str = ""):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr

    def run(self, command: str, *, timeout_s: float | None = None) -> CommandResult:
        return CommandResult(self.name, command, self.rc, self.stdout, self.stderr)


def test_failure_message_quotes_stdout_when_stderr_is_empty():
    result = CommandResult("h", "nvidia-smi -L", 6, "No devices were found\n", "")
    assert result.failure == "exit code 6: No devices were found"
    assert CommandResult("h", "x", 1, "", "").failure == "exit code 1 (no output)"
    assert CommandResult("h", "x", 2, "out\n", "err\n").failure == "exit code 2: err"
    facts = HostFacts(_Canned(3, "something on stdout only\n"))  # any fact, not only the GPUs
    with pytest.raises(CommandFailed, match="exit code 3: something on stdout only"):
        facts.links()


# REAL words (a public report, driver 610.57.04: the first line of `nvidia-smi 2>&1` with GPU1 lost, the others
# listed after it); here before the query rows of the GPUs still there, with exit code 0 as a wrapper hands it on.
LOST_RC0 = ("Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error\n"
            "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, GPU-a, 00000000:21:00.0, 610.57.04, 12.0, 97887\n")


def test_lost_gpu_words_with_exit_code_0_are_lost_gpus_not_a_parse_error():
    """Issue 21.5: the answer above was `ParseError: expected 7 columns, got 1`, the GPU count could not check."""
    facts = HostFacts(_Canned(0, LOST_RC0))
    assert facts.gpus_lost() == ("nvidia-smi says the GPUs are gone: Unable to determine the device handle for "
                                 "GPU1: 0000:34:00.0: Unknown Error")
    only = HostFacts(_Canned(0, "No devices were found\n"))
    assert only.gpus_lost() == "nvidia-smi says the GPUs are gone: No devices were found"


@pytest.mark.parametrize("case", sorted(LOST))
def test_lost_gpus_are_named_in_nvidia_smis_words(case):
    rc, words = LOST[case]
    facts = HostFacts(_Canned(rc, words))
    assert facts.gpus_lost() == f"nvidia-smi says the GPUs are gone: exit code {rc}: {words.strip()}"


@pytest.mark.parametrize("case", sorted(LOST))
def test_a_gpu_off_the_bus_fails_the_gpu_count_with_nvidia_smis_words(pytester, case):
    rc, words = LOST[case]
    recording = pytester.path / "recording"
    recording.mkdir()
    record = {"host": "gpu-node", "command": GPU_QUERY.render(), "rc": rc, "stdout": words, "stderr": "",
              "duration_s": 0.1, "timed_out": False}
    (recording / "commands-synth.jsonl").write_text(json.dumps(record) + "\n")
    inventory = pytester.path / "gpu.toml"
    inventory.write_text('[deployment]\nname = "gpu-lost"\nkind = "lab"\n\n[[hosts]]\nname = "gpu-node"\n'
                         'platform = "p"\ngpus = { count = 4, name = "NVIDIA H200" }\n')
    _, outcomes = run_hosts(pytester, "--inventory", str(inventory), "--replay", str(recording),
                            "-k", "gpu_count or gpu_names")
    by_name = {nodeid.split("::", 1)[1]: result for nodeid, result in outcomes.items()}
    outcome, message = by_name["test_gpu_count_matches_inventory[gpu-node]"]
    assert outcome == "failed", message
    assert "expected: 4" in message and "observed: 0" in message and words.strip() in message
    outcome, message = by_name["test_gpu_names_match_inventory[gpu-node]"]
    assert outcome != "passed" and words.strip() in message, message  # never "all match" over no GPUs
