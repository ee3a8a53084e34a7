#!/usr/bin/env bash
# record_gpu_health.sh -- capture, on a REAL GPU machine, what the GPU health checks (hosts.gpu.health.*) read,
# byte for byte, then run the host contract there with the H200 inventory's health section, recorded.
#
# Usage (on the lent H200 x2 machine, from the repo root; .whl/ holds the suite's wheels):
#   OUT=/some/dir bash scripts/record_gpu_health.sh
# Writes $OUT/health-rec.tgz: rec/ with one file per capture (stdout), NAME.stderr, rec/MANIFEST.tsv
# ("NAME<TAB>rc<TAB>command"), and rec/contract/ from scripts/device_host_contract.sh (the live --record of
# tests/hosts with selftest/data/inventories/h200x2.toml plus the health section below, and the wrong inventory).
# Every command here only reads; the non-root attempts show what an unprivileged connection would see.
set -u
OUT=${OUT:-/tmp/llmval-device-out}
R=/tmp/health-rec/rec
rm -rf /tmp/health-rec && mkdir -p "$R" "$OUT"
MAN="$R/MANIFEST.tsv"
: >"$MAN"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

cap() {  # NAME TIMEOUT_S CMD: stdout and stderr kept apart, exit code in the manifest
    local name=$1 t=$2
    shift 2
    timeout "$t" bash -c "$*" >"$R/$name" 2>"$R/$name.stderr"
    printf '%s\t%s\t%s\n' "$name" "$?" "$*" >>"$MAN"
    [ -s "$R/$name.stderr" ] || rm -f "$R/$name.stderr"
}

XID_JOURNAL="journalctl -k -b --no-pager -g 'NVRM: Xid|Linux version'"  # = llmval.hostfacts.XID_JOURNAL
XID_DMESG="dmesg 2>&1 | grep -E 'NVRM: Xid|Linux version|dmesg: '"       # = llmval.hostfacts.XID_DMESG
date -u +%Y-%m-%dT%H:%M:%SZ >"$R/date-utc.txt"
cap uname-a.txt 10 "uname -a"
cap nvidia-smi-q.xml 60 "nvidia-smi -q -x"
R6="sw_power_cap hw_slowdown hw_thermal_slowdown hw_power_brake_slowdown sw_thermal_slowdown sync_boost"
CLOCKS=pci.bus_id$(for r in $R6; do printf ',clocks_event_reasons.%s' "$r"; done)
THROTTLE=pci.bus_id$(for r in $R6; do printf ',clocks_throttle_reasons.%s' "$r"; done)
cap smi-clocks-1.csv 60 "nvidia-smi --query-gpu=$CLOCKS --format=csv,noheader"  # = llmval.hostfacts.SMI_CLOCKS
sleep 1
cap smi-clocks-2.csv 60 "nvidia-smi --query-gpu=$CLOCKS --format=csv,noheader"
cap smi-clocks-header.csv 60 "nvidia-smi --query-gpu=$CLOCKS --format=csv"
cap smi-clocks-active.csv 60 "nvidia-smi --query-gpu=pci.bus_id,clocks_event_reasons.active --format=csv,noheader"
cap smi-throttle-names.csv 60 "nvidia-smi --query-gpu=$THROTTLE --format=csv,noheader"
cap smi-q-x-d-PERFORMANCE.xml 60 "nvidia-smi -q -x -d PERFORMANCE"
cap help-query-gpu-clocks.txt 30 "nvidia-smi --help-query-gpu | grep -n -i -A2 'clocks_event_reasons\|clocks_throttle_reasons'"
cap xid-journal.txt 30 "$XID_JOURNAL"
cap xid-dmesg.txt 30 "$XID_DMESG"
cap which-log-tools.txt 10 'for t in journalctl dmesg setpriv; do printf "%s: " $t; command -v $t || echo MISSING; done'
cap dmesg-restrict.txt 10 "cat /proc/sys/kernel/dmesg_restrict"
cap dmesg-head.txt 30 "dmesg | head -3"
cap xid-dmesg-nobody.txt 30 "setpriv --reuid=65534 --regid=65534 --clear-groups bash -c \"$XID_DMESG\""
cap xid-journal-nobody.txt 30 "setpriv --reuid=65534 --regid=65534 --clear-groups bash -c \"$XID_JOURNAL\""

# the H200 inventory's health section (the committed h200x2.toml carries the same once this recording landed)
cat >>selftest/data/inventories/h200x2.toml <<'TOML'

[hosts.gpus.health]
pcie_gen_min = 5
pcie_width_min = 16
persistence_mode = "enabled"
TOML
OUT="$R/contract" bash scripts/device_host_contract.sh >"$R/contract.log" 2>&1
echo "contract rc=$?" >>"$R/contract.log"
tar czf "$OUT/health-rec.tgz" -C /tmp/health-rec rec
cat "$MAN"
tail -n 4 "$R/contract.log"
