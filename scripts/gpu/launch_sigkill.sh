#!/bin/bash
# scripts/gpu/launch_sigkill.sh NAME INVENTORY [pytest args...]: a `--launch` run killed with SIGKILL leaves nothing
# (issue 30.6). The suite launches INVENTORY's [launch] stack; as soon as its reports/launch/<run>/summary.json says
# ready (`launch_to_ready_s`), pytest (`suite_pid`) gets `kill -9`, so no teardown runs and only the launch watchdog
# can end the engine. Then, every 0.5 s for at most WAIT_S (default 60) s, it looks with its own tools (not the
# suite's code): the launch's process groups (summary.json processes[].pgid) and the processes carrying its
# LLMVAL_LAUNCH_ID (/proc/*/environ), the endpoint's port, `nvidia-smi --query-compute-apps` (skipped where there is
# no nvidia-smi), and that the watchdog itself has exited. Exit 0 (PASS) when all are empty, 1 (FAIL, or INVALID: the
# run had torn down by itself before the kill) otherwise.
# Writes /tmp/runs/NAME/: pytest.out, summary.json, watchdog.log, before-gpu-apps.txt, at-kill-ps.txt, result.txt (seconds to each), after/,
# and packs it into $OUT/NAME.tgz. pytest args default to `-m smoke`. READY_S (default 900) bounds the launch.
# INVENTORY `vllm`: inventories/h200-vllm.toml with a [launch] that starts vLLM as serve.sh does (its flags, port
# 8000, /tmp/model; the engine's log is the launch's own, logs = "launch"), written to /tmp/runs/NAME/inventory.toml.
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
name=${1:?usage: launch_sigkill.sh NAME INVENTORY|vllm [pytest args...]}; inv=${2:?no inventory}; shift 2
[ $# -gt 0 ] || set -- -m smoke
w=$RUNS/$name; rm -rf "$w"; mkdir -p "$w"
if [ "$inv" = vllm ]; then  # the flags are serve.sh's: keep the two the same
  sed 's|^logs = "file:/tmp/vllm.log"|logs = "launch"|' "$REPO/$INVENTORY" > "$w/inventory.toml"
  cat >> "$w/inventory.toml" << EOF

# Added by scripts/gpu/launch_sigkill.sh: the suite starts vLLM itself (--launch), as serve.sh does.
[launch]
stop = []
term_grace_s = 15

[[launch.start]]
host = "h200"
name = "vllm-h200"
background = true
run = "exec python3 -m vllm.entrypoints.openai.api_server --model $MODEL --served-model-name smollm2 --host 127.0.0.1 --port $PORT --dtype bfloat16 --max-model-len 8192 --gpu-memory-utilization 0.3 --enable-auto-tool-choice --tool-call-parser hermes"
env = { PYTHONPATH = "$SITE" }

[launch.ready]
endpoint = "h200-vllm"
timeout_s = 600
no_progress_s = 300
interval_s = 1
EOF
  inv=$w/inventory.toml
fi
inv=$(readlink -f "$inv")
say() { log "launch_sigkill $name: $*" | tee -a "$w/result.txt"; }
json() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }
gpu_apps() { command -v nvidia-smi > /dev/null && nvidia-smi --query-compute-apps=pid,process_name,used_memory \
  --format=csv,noheader 2>&1; }
left() {  # what is left of the launch, one line each ("group", "tagged", "port"): nothing once all is gone
  python3 - "$launch_id" "$pgids" "$port" << 'EOF'
import os, socket, sys
launch_id, pgids, port = sys.argv[1], {int(p) for p in sys.argv[2].split()}, int(sys.argv[3])
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
        environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        continue
    state, _, pgid = stat[stat.rindex(")") + 2:].split()[:3]
    if state not in ("Z", "X") and int(pgid) in pgids:
        print(f"group {pgid}: pid {pid} {cmdline}")
    if state not in ("Z", "X") and f"LLMVAL_LAUNCH_ID={launch_id}".encode() in environ:
        print(f"tagged: pid {pid} (pgid {pgid}) {cmdline}")
with socket.socket() as probe:
    probe.settimeout(1)
    if probe.connect_ex(("127.0.0.1", port)) == 0:
        print(f"port {port} accepts connections")
EOF
}
alive() { local s; s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }

(cd "$REPO" && PYTHONPATH=$SUITE:$SITE exec python3 -m pytest --inventory="$inv" --launch --reports "$w/reports" \
   -p no:xdist -p no:cacheprovider "$@") > "$w/pytest.out" 2>&1 &
pytest_pid=$!
say "pytest --launch started (pid $pytest_pid, $inv, args $*)"
t0=$(date +%s); summary=""; suite_pid=""
while :; do  # one look a 0.2 s: the kill follows the ready line at once, before the first test can end the run
  summary=$(ls "$w"/reports/launch/*/summary.json 2>/dev/null | head -1)
  [ -n "$summary" ] && suite_pid=$(json "$summary" 'd["suite_pid"] if d["launch_to_ready_s"] is not None else ""' \
    2>/dev/null) && [ -n "$suite_pid" ] && break
  kill -0 $pytest_pid 2>/dev/null || { say "FAIL: pytest ended before the stack was ready"; tail -30 "$w/pytest.out";
    exit 1; }
  [ $(( $(date +%s) - t0 )) -gt "${READY_S:-900}" ] && { say "FAIL: not ready within ${READY_S:-900} s";
    kill -9 $pytest_pid; exit 1; }
  sleep 0.2
done
gpu_apps > "$w/before-gpu-apps.txt"
kill -9 "$suite_pid"; killed_at=$(date +%s.%N)
say "kill -9 $suite_pid (pytest, summary.json suite_pid) at $(date -u +%H:%M:%S.%N | cut -c1-12)"
ps -eo pid,ppid,pgid,sid,etimes,args > "$w/at-kill-ps.txt"
wait $pytest_pid 2>/dev/null
[ "$suite_pid" = "$pytest_pid" ] || say "note: summary.json suite_pid $suite_pid is not the started pid $pytest_pid"
launch_id=$(json "$summary" 'd["launch_id"]')
pgids=$(json "$summary" '" ".join(str(p["pgid"]) for p in d["processes"])')
watchdog_pid=$(json "$summary" 'd["watchdog"].get("pid", "")')
port=$(json "$summary" '__import__("urllib.parse").parse.urlsplit(d["url"]).port')
say "it was ready after $(json "$summary" 'd["launch_to_ready_s"]') s: launch $launch_id, process groups $pgids," \
    "watchdog pid ${watchdog_pid:-none}, port $port; GPU apps before the kill: $(tr '\n' ';' < "$w/before-gpu-apps.txt")"
invalid=""
[ "$(json "$summary" 'd["teardown_s"]')" = None ] || invalid="teardown had already run before the kill"
since() { python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$killed_at"; }
groups_s=""; tagged_s=""; port_s=""; gpu_s=""; watchdog_s=""
while :; do
  now=$(left)
  [ -z "$groups_s" ] && ! grep -q "^group" <<< "$now" && groups_s=$(since)
  [ -z "$tagged_s" ] && ! grep -q "^tagged" <<< "$now" && tagged_s=$(since)
  [ -z "$port_s" ] && ! grep -q "^port" <<< "$now" && port_s=$(since)
  [ -z "$gpu_s" ] && { command -v nvidia-smi > /dev/null || gpu_s="(no nvidia-smi)"; }
  [ -z "$gpu_s" ] && [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null)" ] && gpu_s=$(since)
  [ -z "$watchdog_s" ] && { [ -z "$watchdog_pid" ] || ! alive "$watchdog_pid"; } && watchdog_s=$(since)
  [ -n "$groups_s" ] && [ -n "$tagged_s" ] && [ -n "$port_s" ] && [ -n "$gpu_s" ] && [ -n "$watchdog_s" ] && break
  [ "$(since | cut -d. -f1)" -ge "${WAIT_S:-60}" ] && break
  sleep 0.5
done
cp "$summary" "$w/summary.json"; cp "$(dirname "$summary")/watchdog.log" "$w/watchdog.log" 2>/dev/null
verdict=PASS
[ -n "$invalid" ] && verdict="INVALID ($invalid)"
for v in "$groups_s" "$tagged_s" "$port_s" "$gpu_s" "$watchdog_s"; do [ -n "$v" ] || verdict=FAIL; done
say "$verdict: seconds after kill -9 until empty: process groups ${groups_s:-NOT within ${WAIT_S:-60} s}," \
    "tagged processes ${tagged_s:-NOT}, port $port ${port_s:-NOT}, GPU compute apps ${gpu_s:-NOT}," \
    "watchdog exited ${watchdog_s:-NOT}"
[ "$verdict" = PASS ] || say "left: $(left | tr '\n' ';') GPU: $(gpu_apps | tr '\n' ';')"
say "watchdog.log:"; sed 's/^/    /' "$w/watchdog.log" 2>/dev/null | tee -a "$w/result.txt"
bash "$here/capture.sh" "$w/after" > /dev/null 2>&1
bash "$here/pack.sh" "$name" "$name" > /dev/null 2>&1
[ "$verdict" = PASS ]
