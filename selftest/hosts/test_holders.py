"""GPU holders: a passing `nvidia-smi` (another worker's query, a monitoring agent) is not a stray process.
Seen for real on the H200 host under `-n auto`: five of our own nvidia-smi queries held /dev/nvidia*."""

from __future__ import annotations

from llmval.hostfacts import HostFacts
from llmval.inventory import HostSpec, LocalTransport
from llmval.io.transport import connect

FAKE_FUSER = """#!/bin/sh
# first call: our own query (nvidia-smi) and a stray python3; later calls: only the stray python3
n=$(cat {state} 2>/dev/null || echo 0); echo $((n + 1)) > {state}
echo '                     USER        PID ACCESS COMMAND'
[ "$n" = 0 ] && echo '/dev/nvidia0:        root       1961 F...m nvidia-smi'
echo '/dev/nvidiactl:       root        713 F...m python3'
"""


def test_a_passing_nvidia_smi_is_dropped_and_a_stray_worker_stays(tmp_path):
    (tmp_path / "fuser").write_text(FAKE_FUSER.format(state=tmp_path / "calls"))
    (tmp_path / "fuser").chmod(0o755)
    host = HostSpec(name="me", platform="p", transport=LocalTransport(path_prepend=[str(tmp_path)]))
    holders = HostFacts(connect(host)).gpu_holders()
    assert [(h.pid, h.command) for h in holders] == [(713, "python3")]
    assert (tmp_path / "calls").read_text().strip() == "2"  # one resample was enough
