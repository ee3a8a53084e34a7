#!/bin/bash
# scripts/gpu/capture.sh DIR: the GPU and process state, byte for byte, beside a recording (read-only commands):
# nvidia-smi -q -x, the compute apps (both field orders: the suite's and the kit's), fuser -v /dev/nvidia*,
# ps -eo pid,ppid,lstart,comm,args, the listening TCP sockets. Each NAME gets NAME.stderr when stderr was not empty.
set -u
d=$1; mkdir -p "$d"
cap() {  # NAME CMD
  local name=$1; shift
  timeout 60 bash -c "$*" > "$d/$name" 2> "$d/$name.stderr"; echo "$name	$?	$*" >> "$d/MANIFEST.tsv"
  [ -s "$d/$name.stderr" ] || rm -f "$d/$name.stderr"
}
date -u +%Y-%m-%dT%H:%M:%SZ > "$d/date-utc.txt"
cap nvidia-smi-q.xml "nvidia-smi -q -x"
cap nvidia-smi.txt "nvidia-smi"
cap compute-apps.csv "nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid,process_name --format=csv,noheader,nounits"
cap compute-apps-header.csv "nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv"
cap fuser-v.txt "fuser -v /dev/nvidia* 2>&1"
cap ps.txt "ps -eo pid,ppid,lstart,comm,args"
cap ps-ww.txt "ps -ww -eo pid=,ppid=,etimes=,args="
cap tcp-listening.txt "awk '\$4 == \"0A\" {print \$2, \$8}' /proc/net/tcp /proc/net/tcp6 2>/dev/null"
cap port-pids.txt "fuser -v -n tcp ${PORT:-${LLMVAL_GPU_PORT:-8000}} 2>&1"
