"""GPU health (issue 16): the health fields of `nvidia-smi -q -x`, a second clocks sample, kernel-log Xids.

Judging lives in `llmval.gpu.health`; this module only declares what is read and how it is parsed.
"""

from __future__ import annotations

import time

from ..core.errors import ReplayMiss
from ..gpu.health import RESAMPLE_INTERVAL_S, KernelLog, read_dmesg, read_journal
from ..parsers.gpu_health import (
    CLOCKS_QUERY_FIELDS,
    GpuHealth,
    parse_clocks_query,
    parse_gpu_health_text,
    parse_gpu_health_xml,
)
from ._command import Command
from ._fact import Reader, fact
from .gpu import SMI_TEXT, SMI_XML, from_smi_report

SMI_CLOCKS = Command("smi-clocks", f"nvidia-smi --query-gpu={','.join(CLOCKS_QUERY_FIELDS)} --format=csv,noheader")
XID_JOURNAL = Command("xid-journal", "journalctl -k -b --no-pager -g 'NVRM: Xid|Linux version'")
XID_DMESG = Command("xid-dmesg", "dmesg 2>&1 | grep -E 'NVRM: Xid|Linux version|dmesg: '")
"""The first kernel-log reads: superseded (they drop `GPU has fallen off the bus` without an Xid line), kept
byte for byte so the recordings made with them are still answered (see `_kernel_read`)."""
OFF_BUS_JOURNAL = Command("kernel-gpu-journal",
                          "journalctl -k -b --no-pager -g 'NVRM: Xid|fallen off the bus|Linux version'")
OFF_BUS_DMESG = Command("kernel-gpu-dmesg",
                        "dmesg 2>&1 | grep -E 'NVRM: Xid|fallen off the bus|Linux version|dmesg: '")
"""The second kernel-log reads: superseded (their grep keeps only the last line of the driver's multi-line
`NVRM: The NVIDIA GPU <bus>` ... `fallen off the bus` message, without the bus id), kept byte for byte too."""
KERNEL_GPU_JOURNAL = Command("kernel-gpu-events-journal",
                             "journalctl -k -b --no-pager -g "
                             "'NVRM: Xid|NVRM: The NVIDIA GPU|installed in this system has|fallen off the bus|"
                             "Linux version'")
KERNEL_GPU_DMESG = Command("kernel-gpu-events-dmesg",
                           "dmesg 2>&1 | grep -E "
                           "'NVRM: Xid|NVRM: The NVIDIA GPU|installed in this system has|fallen off the bus|"
                           "Linux version|dmesg: '")
"""Xid lines, both forms of a GPU off the bus (the one-line `NVRM: GPU <bus>: GPU has fallen off the bus` and the
three lines of `NVRM: The NVIDIA GPU <bus>` / `NVRM: (PCI ID ...) installed in this system has` / `NVRM: fallen off
the bus and is not responding to commands.`, each line kept) and the boot banner."""
"""The third kernel-log reads: superseded (their grep drops the driver's GSP timeout lines that come without an Xid
line), kept byte for byte too."""
GSP_KERNEL_JOURNAL = Command("kernel-gpu-gsp-journal",
                             "journalctl -k -b --no-pager -g "
                             "'NVRM: Xid|NVRM: The NVIDIA GPU|installed in this system has|fallen off the bus|"
                             "rpcRecvPoll timedout|GSP Timeout|eartbeat|Linux version'")
GSP_KERNEL_DMESG = Command("kernel-gpu-gsp-dmesg",
                           "dmesg 2>&1 | grep -E "
                           "'NVRM: Xid|NVRM: The NVIDIA GPU|installed in this system has|fallen off the bus|"
                           "rpcRecvPoll timedout|GSP Timeout|eartbeat|Linux version|dmesg: '")
"""As the third reads, plus the GSP firmware's timeouts (`rpcRecvPoll timedout for fn 76!`, the `GSP Timeout`
banner, heartbeat timeouts: `llmval.parsers.gpu_health.GSP_TIMEOUT_RE` picks the NVRM ones)."""
SUPERSEDED = {GSP_KERNEL_JOURNAL: (KERNEL_GPU_JOURNAL, OFF_BUS_JOURNAL, XID_JOURNAL),
              GSP_KERNEL_DMESG: (KERNEL_GPU_DMESG, OFF_BUS_DMESG, XID_DMESG)}
"""Each kernel-log read and the reads it superseded, newest first: a replay answers with the first it recorded."""


@fact(SMI_XML, SMI_TEXT, section="gpus.health", checks="hosts.gpu.health.*")
def gpu_health(host: Reader) -> list[GpuHealth]:
    """Per-GPU health fields (PCIe link, ECC, remapped rows, clocks event reasons...) of `nvidia-smi -q -x`
    (`nvidia-smi -q` where no XML: the same fields under the XML's names)."""
    return from_smi_report(host, parse_gpu_health_xml, parse_gpu_health_text)


@fact(SMI_CLOCKS, section="gpus.health", needs=lambda h: False)
def gpu_health_resample(host: Reader) -> list[GpuHealth]:
    """A second sample of the clocks event reasons (CSV query), RESAMPLE_INTERVAL_S after asking. On demand."""
    time.sleep(RESAMPLE_INTERVAL_S)  # sampling interval, not a readiness wait
    return parse_clocks_query(host.output(SMI_CLOCKS))


def _kernel_log_plan(h) -> list[tuple]:
    health = h.gpus.health if h.gpus is not None else None
    if health is None or health.kernel_log_via is not None or "xid" in health.skip:
        return []
    return [(health.kernel_log,)]


def _kernel_read(host: Reader, command: Command):
    """The kernel-log read; a replay of a recording made before the command existed answers with the command it
    superseded (that recording's own evidence: its verdict is the one it recorded)."""
    try:
        return host.result(command)
    except ReplayMiss as missing:
        for older in SUPERSEDED[command]:
            try:
                return host.result(older)
            except ReplayMiss:
                continue
        raise missing from None


@fact(GSP_KERNEL_JOURNAL, GSP_KERNEL_DMESG, KERNEL_GPU_JOURNAL, KERNEL_GPU_DMESG, OFF_BUS_JOURNAL, OFF_BUS_DMESG,
      XID_JOURNAL, XID_DMESG,
      section="gpus.health.kernel_log",
      needs=_kernel_log_plan)
def kernel_log(host: Reader, kind: str) -> list[KernelLog]:
    """Xid lines and GPUs off the bus (both forms) of the kernel log since boot from `journal`, `dmesg` or `auto`
    (the journal, else dmesg); each source tried says what it found or why it could not be read."""
    logs: list[KernelLog] = []
    if kind in ("auto", "journal"):
        result = _kernel_read(host, GSP_KERNEL_JOURNAL)
        logs.append(read_journal(result.rc, result.stdout, result.stderr, result.command))
        if kind == "journal" or not logs[-1].problem:
            return logs
    result = _kernel_read(host, GSP_KERNEL_DMESG)
    logs.append(read_dmesg(result.rc, result.stdout, result.stderr, result.command))
    return logs
