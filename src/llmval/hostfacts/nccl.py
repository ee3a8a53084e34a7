"""NCCL INFO/WARN lines of the serving stack, from a file, the unit's current journal, or docker logs."""

from __future__ import annotations

from ..inventory import Source
from ..parsers.nccl import NcclLog, parse_nccl_log
from ._command import CONTAINER, GLOB, UNIT, Command
from ._fact import Reader, fact

NCCL_FILE = Command("nccl-file", "grep -hE 'NCCL (INFO|WARN)' {path~}", path=GLOB)
NCCL_JOURNAL = Command(
    "nccl-journal",
    "journalctl -o cat --no-pager _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value {unit}) "
    "| grep -E 'NCCL (INFO|WARN)'",
    unit=UNIT,
)
NCCL_DOCKER = Command("nccl-docker", "docker logs {name} 2>&1 | grep -E 'NCCL (INFO|WARN)'", name=CONTAINER)


@fact(NCCL_FILE, NCCL_JOURNAL, NCCL_DOCKER, section="nccl", judges={
    "nccl.expect_transport": "hosts.nccl.transport", "nccl.forbid": "hosts.nccl.transport",
    "nccl.p2p_disabled": "hosts.nccl.p2p_disabled"}, needs=lambda h: [(h.nccl.log,)] if h.nccl else [])
def nccl_log(host: Reader, source: Source) -> NcclLog:
    """NCCL INFO/WARN lines from `file:<path>`, `journal:<unit>` (current invocation) or `docker:<name>`."""
    if source.kind == "file":
        out = host.output(NCCL_FILE, ok_rcs=(0, 1), path=source.value)
    elif source.kind == "journal":
        out = host.output(NCCL_JOURNAL, ok_rcs=(0, 1), unit=source.value)
    else:
        out = host.output(NCCL_DOCKER, ok_rcs=(0, 1), name=source.value)
    return parse_nccl_log(out)
