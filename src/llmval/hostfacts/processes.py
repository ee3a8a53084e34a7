"""Who a GPU holder is and whether its server is still there: process rows, serving ports, GPU memory per pid.

Four read-only commands, each its own fact:

- `processes(pids)`: `ps -ww -o pid=,ppid=,etimes=,args= -p <pid,...>`: parent, age and full command line
  (the process title: `VLLM::EngineCore`, where fuser prints the 15-character comm `VLLM::EngineCor`);
  `llmval.gpu.holders.lineage(facts, pids)` walks the parents up with it (a bounded number of `ps` calls);
- `listening_ports()`: the listening TCP sockets of the host (its network namespace) and their owners' uids,
  from `/proc/net/tcp` and `/proc/net/tcp6` (readable without privileges, so "nothing listens" is certain);
- `port_pids(port)`: the processes holding a socket on that local port (`fuser -n tcp PORT`; seeing other
  users' processes needs their uid or root);
- `gpu_apps()`: GPU memory per process and GPU (`nvidia-smi --query-compute-apps`; name last).

    >>> PROCESS_ROWS.render(pids="4242,4101")
    'ps -ww -o pid=,ppid=,etimes=,args= -p 4242,4101'
    >>> PORT_PIDS.render(port=8000)
    'fuser -n tcp 8000 2>/dev/null'
"""

from __future__ import annotations

from ..core.errors import CommandFailed
from ..inventory.values import PIDS
from ..parsers.procs import (
    ComputeApp,
    ProcessRow,
    parse_compute_apps,
    parse_fuser_pids,
    parse_listening_ports,
    parse_ps_rows,
)
from ._command import NUMBER, Command
from ._fact import Reader, fact

PROCESS_ROWS = Command("process-rows", "ps -ww -o pid=,ppid=,etimes=,args= -p {pids}", pids=PIDS)
LISTENING = Command("tcp-listening",
                    "awk '$4 == \"0A\" {{print $2, $8}}' /proc/net/tcp /proc/net/tcp6 2>/dev/null")
PORT_PIDS = Command("port-pids", "fuser -n tcp {port} 2>/dev/null", port=NUMBER)
GPU_APPS = Command("gpu-apps", "nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid,process_name "
                   "--format=csv,noheader,nounits")

def _gpu_hosts(h) -> bool:
    return h.gpu_processes is not None


def _holders_found(facts) -> bool:
    """The host checks read GPU memory per process and the listening ports only where processes hold the GPUs
    (`llmval.gpu.holders.read_judgement`): read ahead only there (64 idle hosts: one command less each)."""
    return bool(facts.gpu_holders())


@fact(PROCESS_ROWS, section="gpu_processes", needs=lambda h: False)
def processes(host: Reader, pids: tuple[int, ...]) -> dict[int, ProcessRow]:
    """The rows of the processes `pids` that exist (ps exits 1 when none does)."""
    if not pids:
        return {}
    rows = parse_ps_rows(host.output(PROCESS_ROWS, ok_rcs=(0, 1), pids=",".join(str(p) for p in sorted(pids))))
    return {row.pid: row for row in rows}


@fact(LISTENING, section="gpu_processes", needs=_gpu_hosts, ahead_if=_holders_found)
def listening_ports(host: Reader) -> dict[int, list[int]]:
    """Listening TCP ports of the host -> uids owning those sockets (/proc/net/tcp and tcp6)."""
    result = host.result(LISTENING)
    if result.rc not in (0, 2) or (result.rc == 2 and not result.stdout.strip()):
        raise CommandFailed(host.name, result.command, result.failure)
    return parse_listening_ports(result.stdout)


@fact(PORT_PIDS, section="gpu_processes", needs=lambda h: False)
def port_pids(host: Reader, port: int) -> list[int]:
    """Processes holding a socket on local TCP `port` (fuser exits 1 when it sees none)."""
    return parse_fuser_pids(host.output(PORT_PIDS, ok_rcs=(0, 1), port=port))


@fact(GPU_APPS, section="gpu_processes", needs=_gpu_hosts, ahead_if=_holders_found)
def gpu_apps(host: Reader) -> list[ComputeApp]:
    """GPU memory each process holds on each GPU, as nvidia-smi accounts it."""
    return parse_compute_apps(host.output(GPU_APPS))
