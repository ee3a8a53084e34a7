#!/bin/bash
# scripts/gpu/ray/scenario.sh NAME...: Ray scenarios on the lent H200, in the order given, in ONE device command
# (each packs $OUT/NAME.tgz as ../scenario.sh does: recording, reports, engine log, GPU/process captures, and the
# cluster as Ray reports it: `ray list nodes|actors|jobs`, `ray status`). The engine is vLLM 0.24.0 with
# `--distributed-executor-backend ray --enforce-eager` (eager only shortens the start; no check reads it).
#   healthy      cluster up (head + second raylet), vLLM on it; smoke (h200-vllm-ray.toml)
#   contract     the whole contract against the engine healthy started (one device call of its own: > 330 s)
#   node-down    kill -9 of the second raylet; smoke once Ray reports the node DEAD
#   monitor-on   the second raylet started again with Ray's memory monitor left on; smoke
#   worker-kill  kill -9 of vLLM's Ray worker (the actor holding the GPU) while it serves; smoke
#   legacy       a fresh cluster, vLLM's older Ray executor (VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0: RayWorkerWrapper,
#                the Sparks' vLLM 0.17 shape); smoke. If it does not start, the default executor is started so
#                that `zombie` still has a server (legacy-failed.txt says so)
#   zombie       kill -9 of the API server's pid only: its engine core (the Ray driver) is orphaned and keeps the
#                actor holding the GPU; smoke; then the orphans and the cluster are cleaned up
#   launch       nothing running; `pytest -m smoke --launch` of h200-vllm-ray-launch.toml (Ray head, raylet, vLLM,
#                and teardown by the suite); then what is left: Ray processes, GPU compute apps (result.txt)
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"; source "$here/common.sh"
INV=inventories/h200-vllm-ray.toml
LAUNCH_INV=inventories/h200-vllm-ray-launch.toml
t00=$(date +%s)
env -u LLMVAL_GPU_SITE bash "$here/../setup.sh" || exit 1
bash "$here/setup.sh" || exit 1
# serve.sh and run.sh put $SITE on PYTHONPATH: vLLM's site and Ray's
export LLMVAL_GPU_SITE=$SITE:$RAYSITE
ray_capture() {  # DIR: the cluster as Ray reports it (stdout and stderr apart)
  mkdir -p "$1"
  for what in nodes actors jobs; do
    timeout 60 "$RAY" list $what --format json --limit 10000 > "$1/ray-$what.json" 2> "$1/ray-$what.stderr"
  done
  timeout 60 "$RAY" status > "$1/ray-status.txt" 2>&1
}
suite() {  # NAME TIMEOUT [pytest args]: run.sh, then the Ray captures beside its GPU/process captures
  local name=$1 limit=$2; shift 2
  RUN_TIMEOUT=$limit bash "$here/../run.sh" "$name" $INV "$@"
  ray_capture $RUNS/$name/after
}
serve() {  # NAME [vLLM args]
  bash "$here/../serve.sh" "$@" --distributed-executor-backend ray --enforce-eager
}
ray_worker_pid() {  # by Ray's title, else the GPU holder whose parent is a raylet (vLLM may title it VLLM::Worker)
  local pid; pid=$(pgrep -f '^ray::RayWorker' | head -1)
  if [ -z "$pid" ]; then
    for p in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader); do
      ps -o args= -p "$(ps -o ppid= -p "$p" | tr -d ' ')" | grep -q 'raylet/raylet' && { pid=$p; break; }
    done
  fi
  echo "$pid"
}
for name in "$@"; do
  t0=$(date +%s)
  log "scenario $name"
  case $name in
    healthy)
      bash "$here/cluster.sh" start || exit 1
      ray_capture $RUNS/healthy-cluster
      serve healthy || exit 1
      suite healthy-smoke 120 -m smoke
      bash "$here/../pack.sh" healthy healthy-cluster healthy-smoke ;;
    contract)  # its own device call: the whole contract of this eager engine ran past 330 s (2026-12-02)
      suite healthy-contract 540
      bash "$here/../pack.sh" contract healthy-contract ;;
    node-down)
      bash "$here/cluster.sh" kill-node2 > $T/node-down.txt 2>&1; cat $T/node-down.txt
      suite nodedown-smoke 120 -m smoke
      mv $T/node-down.txt $RUNS/nodedown-smoke/fault.txt
      bash "$here/../pack.sh" node-down nodedown-smoke ;;
    monitor-on)
      MONITOR_ON=1 bash "$here/cluster.sh" start-node2
      echo "second raylet started again at $(date -u +%H:%M:%SZ) without RAY_memory_monitor_refresh_ms" \
        > $T/monitor-on.txt
      suite monitoron-smoke 120 -m smoke
      mv $T/monitor-on.txt $RUNS/monitoron-smoke/fault.txt
      bash "$here/../pack.sh" monitor-on monitoron-smoke ;;
    worker-kill)
      pid=$(ray_worker_pid)
      [ -n "$pid" ] || { log "worker-kill: no Ray worker process"; ps -eo pid,args | grep -i ray | head; continue; }
      mkdir -p $T/workerkill-before && bash "$here/../capture.sh" $T/workerkill-before && ray_capture $T/workerkill-before
      log "worker-kill: kill -9 $pid ($(ps -o args= -p $pid))"
      echo "killed Ray worker pid $pid ($(ps -o args= -p $pid)) at $(date -u +%H:%M:%SZ) with kill -9" > $T/workerkill.txt
      kill -9 "$pid"
      sleep 12  # vLLM's worker monitor polls every 5 s; the engine then shuts down
      suite workerkill-smoke 120 -m smoke
      mv $T/workerkill.txt $RUNS/workerkill-smoke/fault.txt; rm -rf $RUNS/workerkill-smoke/before
      mv $T/workerkill-before $RUNS/workerkill-smoke/before
      bash "$here/../pack.sh" worker-kill workerkill-smoke ;;
    legacy)
      stop_started_engine
      bash "$here/cluster.sh" start || exit 1
      mkdir -p $RUNS/legacy-smoke
      if ! VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 serve legacy; then
        cp $LOG $T/legacy-failed.log
        echo "vLLM's older Ray executor did not start (log: legacy-failed.log); the default one was started" \
          > $T/legacy-failed.txt
        serve legacy-fallback || exit 1
      fi
      suite legacy-smoke 120 -m smoke
      [ -f $T/legacy-failed.txt ] && mv $T/legacy-failed.txt $T/legacy-failed.log $RUNS/legacy-smoke/
      bash "$here/../pack.sh" legacy legacy-smoke ;;
    zombie)
      [ -f $PIDFILE ] && kill -0 "$(cat $PIDFILE)" 2>/dev/null || { log "zombie: no running API server"; continue; }
      mkdir -p $T/zombie-before && bash "$here/../capture.sh" $T/zombie-before && ray_capture $T/zombie-before
      pid=$(cat $PIDFILE)
      log "zombie: kill -9 $pid (the API server only)"; kill -9 "$pid"
      for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      sleep 3
      echo "killed API server pid $pid at $(date -u +%H:%M:%SZ) with kill -9" > $T/zombie.txt
      suite rayzombie-smoke 120 -m smoke
      mv $T/zombie.txt $RUNS/rayzombie-smoke/fault.txt; rm -rf $RUNS/rayzombie-smoke/before
      mv $T/zombie-before $RUNS/rayzombie-smoke/before
      bash "$here/../pack.sh" zombie rayzombie-smoke
      pkill -9 -f '^VLLM::EngineCore' ; rm -f $PIDFILE
      bash "$here/cluster.sh" stop ;;
    launch)
      stop_started_engine; bash "$here/cluster.sh" stop > /dev/null 2>&1; sleep 2
      mkdir -p $RUNS/launch-before && bash "$here/../capture.sh" $RUNS/launch-before
      RUN_TIMEOUT=400 bash "$here/../run.sh" launch-smoke $LAUNCH_INV -m smoke --launch
      sleep 2
      {
        echo "ray processes after teardown: $(pgrep -fc '[r]aylet/raylet|[g]cs_server|^ray::|[r]ay/dashboard' || true)"
        pgrep -fa '[r]aylet/raylet|[g]cs_server|^ray::|[r]ay/dashboard' | cut -c1-200
        echo "GPU compute apps after teardown: $(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | grep -c . || true)"
        nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
        echo "port 8000 listeners: $(fuser -n tcp 8000 2>/dev/null | wc -w)"
      } > $RUNS/launch-smoke/result.txt 2>&1
      cat $RUNS/launch-smoke/result.txt
      bash "$here/../pack.sh" launch launch-before launch-smoke ;;
    *) log "unknown scenario $name"; exit 2 ;;
  esac
  log "scenario $name done in $(( $(date +%s) - t0 )) s"
done
log "all done in $(( $(date +%s) - t00 )) s"
