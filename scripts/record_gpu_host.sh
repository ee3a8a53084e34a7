#!/usr/bin/env bash
# record_gpu_host.sh -- capture REAL nvidia-smi / NCCL / host output on a GPU
# machine, byte for byte, so llmval's parsers can be unit-tested on it.
#
# Usage: scripts/record_gpu_host.sh OUTDIR
#   Writes raw captures into OUTDIR/rec/ and packs them as OUTDIR/record.tar.gz.
#   For every capture NAME it writes NAME (stdout, exact bytes), NAME.stderr
#   (stderr, exact bytes) and a line "NAME<TAB>rc<TAB>command" in
#   rec/MANIFEST.tsv.  Nothing is post-processed.
#
# RECORD_SECTIONS (default "smi host busy nccl net") picks what to capture,
# e.g. RECORD_SECTIONS=net scripts/record_gpu_host.sh /tmp/o
#
# Every step is bounded by `timeout`; the whole script finishes in a few
# minutes at most.  It needs python3 with torch (NCCL) for the NCCL part and
# the held-memory part.  NVLink multicast stays off (NCCL_NVLS_ENABLE=0 etc.).
set -u

OUTDIR=${1:?usage: $0 OUTDIR}
R="$OUTDIR/rec"
mkdir -p "$R"
MAN="$R/MANIFEST.tsv"
: >"$MAN"

# Never turn NVLink multicast on (shared hosts can be put out of service).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
SECTIONS=" ${RECORD_SECTIONS:-smi host busy nccl net} "
want() { [[ "$SECTIONS" == *" $1 "* ]]; }

# cap NAME TIMEOUT_S CMD...   -- run CMD (via bash -c) with stdout/stderr kept apart
cap() {
    local name=$1 t=$2
    shift 2
    timeout "$t" bash -c "$*" >"$R/$name" 2>"$R/$name.stderr"
    local rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$*" >>"$MAN"
    echo "[$(date -u +%H:%M:%S)] $name rc=$rc"
}

date -u +%Y-%m-%dT%H:%M:%SZ >"$R/date-utc.txt"
T0=$(date +%s)

Q_FULL=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,persistence_mode,ecc.errors.uncorrected.volatile.total
Q_SHORT=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total

# ---- 1/2: nvidia-smi, idle -------------------------------------------------
if want smi; then
cap nvidia-smi-query.csv            30 "nvidia-smi --query-gpu=$Q_FULL --format=csv,noheader,nounits"
cap nvidia-smi-query-header.csv     30 "nvidia-smi --query-gpu=$Q_FULL --format=csv"
cap nvidia-smi-query-short.csv      30 "nvidia-smi --query-gpu=$Q_SHORT --format=csv,noheader,nounits"
cap nvidia-smi-q.xml                60 "nvidia-smi -q -x"
cap nvidia-smi-q.txt                60 "nvidia-smi -q"
cap nvidia-smi-L.txt                30 "nvidia-smi -L"
cap nvidia-smi.txt                  30 "nvidia-smi"
cap nvidia-smi-version.txt          30 "nvidia-smi --version"
cap nvidia-smi-topo-m.txt           30 "nvidia-smi topo -m"
cap nvidia-smi-nvlink-status.txt    30 "nvidia-smi nvlink --status"
cap nvidia-smi-compute-apps-idle.csv 30 "nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits"
fi

# ---- 4: host facts ------------------------------------------------------------
if want host; then
cap ls-dev-nvidia.txt               10 "ls -l /dev/nvidia*"
cap proc-driver-nvidia-version.txt  10 "cat /proc/driver/nvidia/version"
cap uname-a.txt                     10 "uname -a"
cap env-nccl.txt                    10 "env | grep -E '^(NCCL|TORCH_SYMM|NVSHMEM|CUDA_VISIBLE)' | sort"
cap versions.txt                    90 "python3 -c 'import sys, torch; print(\"python\", sys.version.split()[0]); print(\"torch\", torch.__version__); print(\"torch.version.cuda\", torch.version.cuda); print(\"nccl\", torch.cuda.nccl.version()); print(\"device_count\", torch.cuda.device_count())'"
cap which-tools.txt                 10 "for t in fuser lspci torchrun nvidia-smi ip python3; do printf '%s: ' \$t; command -v \$t || echo MISSING; done"

# sysfs driver link for each GPU's PCI function (nvidia-smi: 00000000:18:00.0,
# sysfs: 0000:18:00.0)
{
    for bus in $(timeout 30 nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader); do
        sys=$(echo "$bus" | tr 'A-Z' 'a-z' | sed -E 's/^[0-9a-f]{4}([0-9a-f]{4}:)/\1/')
        echo "## nvidia-smi bus id: $bus -> sysfs: $sys"
        echo "\$ readlink /sys/bus/pci/devices/$sys/driver"
        timeout 5 readlink "/sys/bus/pci/devices/$sys/driver"; echo "rc=$?"
        echo "\$ ls -l /sys/bus/pci/devices/$sys/driver"
        timeout 5 ls -l "/sys/bus/pci/devices/$sys/driver" 2>&1; echo "rc=$?"
        for f in vendor device numa_node current_link_speed current_link_width; do
            printf '%s: ' "$f"; timeout 5 cat "/sys/bus/pci/devices/$sys/$f" 2>&1 || true
        done
    done
} >"$R/sysfs-gpu-driver.txt" 2>&1
printf '%s\t%s\t%s\n' sysfs-gpu-driver.txt 0 "per GPU: readlink /sys/bus/pci/devices/<0000:bb:dd.f>/driver (see file)" >>"$MAN"
cap ls-sys-bus-pci-drivers-nvidia.txt 10 "ls -l /sys/bus/pci/drivers/nvidia/"
fi

# ---- 4b: network (iproute2 may be missing: then record what else there is) --
if want net; then
cap ip-j-addr.json                  10 "ip -j addr"
cap ip-o-addr.txt                   10 "ip -o addr"
cap which-net-tools.txt             10 "for t in ip ifconfig busybox hostname; do printf '%s: ' \$t; command -v \$t || echo MISSING; done"
if ! command -v ip >/dev/null 2>&1; then
    if command -v busybox >/dev/null 2>&1; then
        cap busybox-ip-o-addr.txt   10 "busybox ip -o addr"
        cap busybox-ip-addr.txt     10 "busybox ip addr"
    fi
    command -v ifconfig >/dev/null 2>&1 && cap ifconfig-a.txt 10 "ifconfig -a"
    cap ls-sys-class-net.txt        10 "ls -l /sys/class/net/"
    cap sys-class-net-attrs.txt     10 "for d in /sys/class/net/*; do for f in address mtu operstate type flags; do printf '%s/%s: ' \$d \$f; cat \$d/\$f 2>&1; done; done"
    cap proc-net-dev.txt            10 "cat /proc/net/dev"
    cap proc-net-fib_trie.txt       10 "cat /proc/net/fib_trie"
    cap proc-net-if_inet6.txt       10 "cat /proc/net/if_inet6"
    cap proc-net-route.txt          10 "cat /proc/net/route"
    cap hostname-I.txt              10 "hostname -I"
    cap psutil-net_if_addrs.txt     30 "python3 -c 'import psutil, pprint; pprint.pprint(psutil.net_if_addrs()); pprint.pprint(psutil.net_if_stats())'"
fi
fi

if want busy; then

# ---- 2: compute apps / fuser while torch holds 1 GiB on GPU 0 ---------------
READY="$R/.holder-ready"
timeout 150 python3 -c "
import torch, time, os
x = torch.empty(1 << 30, dtype=torch.uint8, device='cuda:0')
x.fill_(1); torch.cuda.synchronize()
open('$READY', 'w').write(str(os.getpid()))
time.sleep(120)
" >"$R/holder.stdout" 2>"$R/holder.stderr" &
HOLDER=$!
for _ in $(seq 1 120); do [ -s "$READY" ] && break; sleep 0.5; done
echo "holder wrapper pid=$HOLDER python pid=$(cat "$READY" 2>/dev/null)" >"$R/holder-pid.txt"
cap nvidia-smi-compute-apps-busy.csv 30 "nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits"
cap nvidia-smi-compute-apps-busy-header.csv 30 "nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv"
cap nvidia-smi-busy.txt             30 "nvidia-smi"
cap nvidia-smi-query-busy.csv       30 "nvidia-smi --query-gpu=$Q_FULL --format=csv,noheader,nounits"
if command -v fuser >/dev/null 2>&1; then
    cap fuser-v-dev-nvidia.txt      30 "fuser -v /dev/nvidia* 2>&1"
    cap fuser-v-dev-nvidia-split.txt 30 "fuser -v /dev/nvidia*"
else
    echo "fuser not found on this host (command -v fuser failed)" >"$R/fuser-MISSING.txt"
fi
kill "$HOLDER" 2>/dev/null
pkid=$(cat "$READY" 2>/dev/null); [ -n "$pkid" ] && kill "$pkid" 2>/dev/null
wait "$HOLDER" 2>/dev/null
rm -f "$READY"

fi

# ---- 3: NCCL all-reduce, 2 GPUs, one process per GPU -------------------------
if want nccl; then
PY="$R/.allreduce.py"
cat >"$PY" <<'EOF'
import os, torch, torch.distributed as dist
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
ok = True
for i in range(5):
    n = 1 << (10 + 4 * i)          # 1Ki .. 64Mi elements
    t = torch.full((n,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    want = world * (world + 1) / 2
    good = bool(torch.all(t == want).item())
    ok &= good
    print(f"rank {rank} all_reduce n={n} value={t[0].item()} want={want} ok={good}", flush=True)
dist.barrier()
print(f"rank {rank} ALL_OK={ok} nccl={torch.cuda.nccl.version()} torch={torch.__version__}", flush=True)
dist.destroy_process_group()
EOF
NGPU=$(timeout 30 nvidia-smi -L | grep -c '^GPU')
SUB=INIT,ENV,NET,P2P,SHM,GRAPH
run_nccl() {   # NAME ENV...   (NCCL output goes to stderr: NAME.stderr)
    local name=$1; shift
    cap "$name" 90 "env $* python3 -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node=$NGPU $PY"
}
run_nccl nccl-allreduce-default      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=$SUB
run_nccl nccl-allreduce-default-plain-info NCCL_DEBUG=INFO
run_nccl nccl-allreduce-p2p-disabled NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=$SUB NCCL_P2P_DISABLE=1
run_nccl nccl-allreduce-p2p-shm-disabled NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=$SUB NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
# per-rank files via NCCL_DEBUG_FILE (default transport)
mkdir -p "$R/nccl-debug-file"
run_nccl nccl-allreduce-default-debugfile NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=$SUB "NCCL_DEBUG_FILE=$R/nccl-debug-file/nccl.%h.%p.log"
rm -f "$PY"
fi

echo "elapsed_s $(( $(date +%s) - T0 ))" >"$R/elapsed.txt"
tar -C "$OUTDIR" -czf "$OUTDIR/record.tar.gz" rec
cat "$MAN"
ls -la "$R" "$OUTDIR"
