#!/bin/bash
# scripts/gpu/serve.sh NAME [extra vLLM args...]: stop the engine these scripts started (its whole process group,
# TERM then KILL), start vLLM 0.24.0 detached (setsid: it outlives the device command) on 127.0.0.1:8000 serving
# /tmp/model as `smollm2` with the hermes tool parser, and wait until /v1/models answers (at most 420 s).
# ENGINE_CPUS pins it (taskset). NOWAIT=1 returns at once (the after-reboot case: the suite's --wait-ready does the waiting).
# Adapted from ../shared/gpu-kit/dev_serve.sh. Log: /tmp/vllm.log (kept as /tmp/vllm-NAME.log once ready).
set -u
source "$(dirname "$0")/common.sh"
name=$1; shift
stop_started_engine
cd "$T"
# ENGINE_CPUS=0-7: the engine (API server, engine core and their threads) on those CPUs only, the clients apart
PIN=(); [ -n "${ENGINE_CPUS:-}" ] && PIN=(taskset -c "$ENGINE_CPUS")
PYTHONPATH=$SITE setsid "${PIN[@]}" python3 -m vllm.entrypoints.openai.api_server --model $MODEL --served-model-name smollm2 \
  --host 127.0.0.1 --port $PORT --dtype bfloat16 --max-model-len 8192 --gpu-memory-utilization 0.3 \
  --enable-auto-tool-choice --tool-call-parser hermes ${LLMVAL_GPU_EXTRA:-} "$@" > $LOG 2>&1 < /dev/null &
echo $! > $PIDFILE
log "serve $name: pid $(cat $PIDFILE): vllm $*${ENGINE_CPUS:+ (CPUs $ENGINE_CPUS)}"
[ -n "${NOWAIT:-}" ] && { log "serve $name: started, not waiting (NOWAIT)"; exit 0; }
t0=$(date +%s)
until curl -sf http://127.0.0.1:$PORT/v1/models > /dev/null; do
  sleep 2
  kill -0 "$(cat $PIDFILE)" 2>/dev/null || { log "serve $name: engine exited"; tail -40 $LOG; exit 1; }
  [ $(( $(date +%s) - t0 )) -gt 420 ] && { log "serve $name: not ready after 420 s"; tail -40 $LOG; exit 1; }
done
log "serve $name: ready after $(( $(date +%s) - t0 )) s"; cp $LOG $T/vllm-$name.log
