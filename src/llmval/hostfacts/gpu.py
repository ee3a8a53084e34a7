"""GPUs from nvidia-smi: the CSV query, the XML log, P2P status, and who holds /dev/nvidia*."""

from __future__ import annotations

import re
import time

from ..core.errors import CommandFailed, LlmvalError, ParseError
from ..gpu.holders import match_name
from ..parsers.gpu_health import parse_nvidia_smi_text
from ..parsers.nvidia_smi import (
    GPU_QUERY_FIELDS,
    GpuInfo,
    SmiLog,
    parse_nvidia_smi_query,
    parse_nvidia_smi_topo_p2p,
    parse_nvidia_smi_xml,
)
from ..parsers.procs import GpuHolder, parse_fuser_verbose
from ._command import NUMBER, Command
from ._fact import Reader, fact

GPU_QUERY = Command("gpu-query", f"nvidia-smi --query-gpu={','.join(GPU_QUERY_FIELDS)} --format=csv,noheader,nounits")
"""Frozen: every recording answers exactly this. A new field is a new fact with its own query."""
SMI_XML = Command("smi-xml", "nvidia-smi -q -x")
SMI_TEXT = Command("smi-q-text", "nvidia-smi -q")
"""The same report as text: read only where `-q -x` fails or prints no XML (`from_smi_report`)."""
P2P_READ = Command("p2p-read", "nvidia-smi topo -p2p r")
GPU_HOLDERS = Command("gpu-holders", "fuser -v /dev/nvidia* 2>&1")
PROC_CGROUP = Command("proc-cgroup", "cat /proc/{pid}/cgroup", pid=NUMBER)

TRANSIENT_HOLDERS = frozenset({"nvidia-smi"})
"""Process names that hold /dev/nvidia* only for the moment of a query."""
HOLDER_RESAMPLES = 3
HOLDER_RESAMPLE_INTERVAL_S = 0.5


GPUS_LOST_RE = re.compile(
    r"No devices were found|Unable to determine the device handle for GPU|GPU is lost|"
    r"couldn't communicate with the NVIDIA driver", re.I)
"""What nvidia-smi prints (on stdout, with a non-zero exit) when GPUs fell off the bus or the driver is gone."""


class GpusLost(CommandFailed):
    """nvidia-smi itself says the GPUs are gone (Xid 79, driver unloaded): the GPU contract is broken."""


@fact(GPU_QUERY, section="gpus", judges={
    "gpus.count": "hosts.gpu.count", "gpus.name": "hosts.gpu.name", "gpus.compute_capability": "hosts.gpu.compute_cap",
    "gpus.driver_min": "hosts.driver.min", "gpus.memory": "hosts.gpu.memory", "gpus.memory_total_mib_min":
    "hosts.gpu.memory", "gpus.uuids": "hosts.gpu.uuids", "gpus.bus_ids": "hosts.gpu.bus_ids"})
def gpus(host: Reader) -> list[GpuInfo]:
    """GPUs from nvidia-smi's CSV query; GpusLost when nvidia-smi itself says the GPUs are gone."""
    result = host.result(GPU_QUERY)
    if GPUS_LOST_RE.search(f"{result.stdout}\n{result.stderr}"):  # whatever the exit code: through some
        # wrappers (and for one lost GPU among others) nvidia-smi's words come with rc 0
        words = result.failure if result.rc != 0 else "; ".join(
            line.strip() for line in f"{result.stdout}\n{result.stderr}".splitlines() if GPUS_LOST_RE.search(line))
        raise GpusLost(host.name, result.command, f"nvidia-smi says the GPUs are gone: {words}")
    if result.rc != 0:
        raise CommandFailed(host.name, result.command, result.failure)
    return parse_nvidia_smi_query(result.stdout)


@fact(GPU_QUERY, section="gpus", needs=lambda h: False)
def gpus_lost(host: Reader) -> str | None:
    """nvidia-smi's own words when it says the GPUs are gone (fell off the bus, driver gone), else None."""
    try:
        host.gpus()
    except GpusLost as error:
        return error.reason
    except LlmvalError:
        return None
    return None


@fact(SMI_XML, section="gpus", needs=lambda h: False)
def smi_xml(host: Reader) -> str:
    """The text of `nvidia-smi -q -x`, read once for every fact drawn from it (smi_log, gpu_health)."""
    return host.output(SMI_XML)


@fact(SMI_TEXT, section="gpus", needs=lambda h: False)
def smi_text(host: Reader) -> str:
    """The text of `nvidia-smi -q`, read once where `-q -x` is not available."""
    return host.output(SMI_TEXT)


def from_smi_report(host: Reader, from_xml, from_text):
    """`from_xml(nvidia-smi -q -x)`; where that fails (an nvidia-smi without XML output: a non-zero exit, or XML it
    cannot read), `from_text(nvidia-smi -q)`, the same fields under the same names. A timeout or an unreachable host
    is not asked again (a hung nvidia-smi hangs for `-q` too); the XML's error stands when the text cannot be read
    either (or a recording holds no text read)."""
    try:
        return from_xml(host.smi_xml())
    except (CommandFailed, ParseError) as xml_error:
        try:
            return from_text(host.smi_text())
        except LlmvalError:
            raise xml_error from None


@fact(SMI_XML, SMI_TEXT, section="gpus", judges={"gpus.cuda_version": "hosts.driver.cuda_version"},
      needs=lambda h: (h.gpus is not None and h.gpus.cuda_version is not None) or h.proxmox is not None)
def smi_log(host: Reader) -> SmiLog:
    """Driver/CUDA versions and per-GPU minor numbers from `nvidia-smi -q -x` (`nvidia-smi -q` where no XML)."""
    return from_smi_report(host, parse_nvidia_smi_xml, parse_nvidia_smi_text)


@fact(P2P_READ, section="gpus.p2p", checks="hosts.gpu.p2p")
def p2p_read(host: Reader) -> dict[tuple[str, str], str]:
    """Peer-to-peer read status between every pair of GPUs, as the driver reports it."""
    return parse_nvidia_smi_topo_p2p(host.output(P2P_READ))


@fact(GPU_HOLDERS, section="gpu_processes", checks=("hosts.gpu.stray_processes", "hosts.gpu.zombie_workers"))
def gpu_holders(host: Reader) -> list[GpuHolder]:
    """Processes holding /dev/nvidia* (fuser exits 1 when there are none), without passers-by.

    A short-lived `nvidia-smi` (our own query from another xdist worker, a monitoring agent) holds the
    devices for a moment: seen on the real H200 host. While such a holder shows, the listing is taken
    again (bounded) and only holders present in every sample are kept; a stray worker stays."""
    holders = parse_fuser_verbose(host.output(GPU_HOLDERS, ok_rcs=(0, 1)))
    for _ in range(HOLDER_RESAMPLES):
        if not any(h.command in TRANSIENT_HOLDERS for h in holders):
            break
        time.sleep(HOLDER_RESAMPLE_INTERVAL_S)  # sampling interval, not a readiness wait
        again = {h.pid for h in parse_fuser_verbose(host.output(GPU_HOLDERS, ok_rcs=(0, 1)))}
        holders = [h for h in holders if h.pid in again]
    return holders


@fact(PROC_CGROUP, section="gpu_processes", needs=lambda h: False)
def cgroup(host: Reader, pid: int) -> str:
    """The process's cgroup v2 line (`0::/system.slice/x.service`); empty when it is gone. Read on demand."""
    lines = host.result(PROC_CGROUP, pid=pid).stdout.splitlines()
    return next((line for line in lines if line.startswith("0::")), lines[0] if lines else "")


def holder_is_allowed(holder: GpuHolder, facts, allowed: list[str], allowed_units: list[str]) -> str | None:
    """How a GPU holder is a serving process (its name is allowed, or its cgroup is one of the allowed units), or
    None. From fuser's name alone (a recording made before the process reads has no command line), matched as the
    live path matches it (`llmval.gpu.holders.match_name`): the kernel's 15-character comm `VLLM::EngineCor` is
    the owner's `VLLM::EngineCore`, and `python3` the program of an allowed `python3 -m ...` command line (issue
    31.6: an old GREEN recording must not turn RED on a name). Live, the command lines are read and
    `llmval.gpu.holders.judge` decides; this is for recordings only."""
    if (name := match_name(holder.command, None, allowed)) is not None:
        return f"allowed as `{name.allowed}`: {name.how}"
    # an allowed command line (`python3 -m vllm.entrypoints.openai.api_server`) whose program is the comm: the
    # recording holds no command line to compare the rest with, so the name is all there is to judge
    program = next((n for n in allowed if " " in n and n.split(" ", 1)[0].rsplit("/", 1)[-1] == holder.command), None)
    if program is not None:
        return (f"allowed as `{program}`: its comm `{holder.command}` is that command line's program (no command "
                "line recorded to compare the rest with)")
    if not allowed_units:
        return None
    unit = GpuHolder(holder.pid, holder.command, facts.cgroup(holder.pid)).unit
    return f"in allowed unit {unit}" if unit in allowed_units else None
