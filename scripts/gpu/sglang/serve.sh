#!/bin/bash
# scripts/gpu/sglang/serve.sh NAME [extra SGLang args...]: stop the server these scripts started (its whole process
# group, TERM then KILL), start SGLang 0.5.17 detached (setsid: it outlives the device command) on 127.0.0.1:30000
# serving /tmp/model as `smollm2` with the hermes tool parser and metrics, and wait until the log says "ready to
# roll" and /v1/models answers (at most 420 s; NOWAIT=1 returns at once: the after-reboot case). Log
# /tmp/sglang.log (kept as /tmp/sglang-NAME.log once ready), pid file /tmp/sglang.pid (a process-group leader).
# The flags keep FA3 (not carried) and FlashInfer's JIT out (triton attention, PyTorch sampling) and skip the
# prefill CUDA graphs; later flags win. Adapted from ../shared/gpu-kit/sglang/dev_serve.sh. kpro6's environment
# rule (NCCL_P2P_DISABLE=1) is set as the seed's unit sets it, so the kpro6-shaped inventory can judge it.
set -u
export LLMVAL_GPU_ENGINE=sglang
source "$(dirname "$0")/../common.sh"
name=$1; shift
stop_started_engine
cd "$T"
NCCL_P2P_DISABLE=1 PYTHONPATH=$SITE setsid python3 -m sglang.launch_server --model-path $MODEL \
  --served-model-name smollm2 --host 127.0.0.1 --port $PORT --dtype bfloat16 --context-length 8192 \
  --mem-fraction-static 0.3 --attention-backend triton --sampling-backend pytorch --grammar-backend xgrammar \
  --cuda-graph-backend-prefill disabled --tool-call-parser hermes --enable-metrics ${LLMVAL_GPU_EXTRA:-} "$@" \
  > $LOG 2>&1 < /dev/null &
echo $! > $PIDFILE
log "serve $name: pid $(cat $PIDFILE): sglang $*"
[ -n "${NOWAIT:-}" ] && { log "serve $name: started, not waiting (NOWAIT)"; exit 0; }
t0=$(date +%s)
until grep -q "ready to roll" $LOG && curl -sf http://127.0.0.1:$PORT/v1/models > /dev/null; do
  sleep 2
  kill -0 "$(cat $PIDFILE)" 2>/dev/null || { log "serve $name: server exited"; tail -40 $LOG; exit 1; }
  [ $(( $(date +%s) - t0 )) -gt 420 ] && { log "serve $name: not ready after 420 s"; tail -40 $LOG; exit 1; }
done
log "serve $name: ready after $(( $(date +%s) - t0 )) s"; cp $LOG $T/sglang-$name.log
grep -iE "KV Cache is allocated|max_total_num_tokens=|Load weight end|CUDA graph end" $LOG | cut -c1-240 | tail -5
