#!/bin/bash
# scripts/gpu/scenario.sh NAME: ONE device command per scenario on the lent H200 (each well under 9 minutes; all
# five about 11 minutes of device time, measured budget in README.md). Each runs setup.sh first (a no-op but for
# the suite's own install once vLLM and the model are in /tmp), records with --record, and packs recording,
# reports, engine log and the GPU/process captures into $OUT/NAME.tgz.
#   healthy  start vLLM as the kit serves it; smoke, then the whole contract (inventories/h200-vllm.toml)
#   fp8kv    restart with --kv-cache-dtype fp8 (and --enforce-eager: faster start); smoke, h200-vllm.toml
#   ngram    restart with n-gram speculation (4 tokens, --enforce-eager); smoke, h200-vllm-spec.toml
#   nowait   restart as healthy without waiting (NOWAIT=1); smoke with --wait-ready=300 at once
#   zombie   kill -9 of the API server's pid ONLY (its EngineCore is left holding the GPU); smoke (hosts + serving)
# Run them in this order: zombie kills the server nowait started (no restart of its own).
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
name=${1:?usage: scenario.sh healthy|fp8kv|ngram|nowait|zombie}
t0=$(date +%s)
bash "$here/setup.sh" || exit 1
INV=$INVENTORY
SPEC='{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"prompt_lookup_min":2}'
case $name in
  healthy)
    bash "$here/serve.sh" healthy || exit 1
    RUN_TIMEOUT=90 bash "$here/run.sh" healthy-smoke $INV -m smoke
    RUN_TIMEOUT=300 bash "$here/run.sh" healthy-contract $INV
    bash "$here/pack.sh" healthy healthy-smoke healthy-contract ;;
  fp8kv)
    bash "$here/serve.sh" fp8kv --kv-cache-dtype fp8 --enforce-eager || exit 1
    RUN_TIMEOUT=180 bash "$here/run.sh" fp8kv-smoke $INV -m smoke
    bash "$here/pack.sh" fp8kv fp8kv-smoke ;;
  ngram)
    bash "$here/serve.sh" ngram --speculative-config "$SPEC" --enforce-eager || exit 1
    RUN_TIMEOUT=180 bash "$here/run.sh" ngram-smoke $SPEC_INVENTORY -m smoke
    bash "$here/pack.sh" ngram ngram-smoke ;;
  nowait)
    NOWAIT=1 bash "$here/serve.sh" nowait || exit 1
    RUN_TIMEOUT=420 bash "$here/run.sh" nowait-smoke $INV -m smoke --wait-ready=300
    bash "$here/pack.sh" nowait nowait-smoke ;;
  zombie)
    [ -f $PIDFILE ] && kill -0 "$(cat $PIDFILE)" 2>/dev/null || { log "zombie: no running API server to kill"; exit 1; }
    mkdir -p $RUNS/zombie-smoke
    bash "$here/capture.sh" $RUNS/zombie-smoke/before
    pid=$(cat $PIDFILE)
    log "zombie: kill -9 $pid (the API server only, not its process group)"
    kill -9 "$pid"
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    sleep 3  # the kernel closes the port; the orphaned EngineCore is reparented
    rm -rf $T/zombie-before; mv $RUNS/zombie-smoke/before $T/zombie-before
    RUN_TIMEOUT=180 bash "$here/run.sh" zombie-smoke $INV -m smoke
    mv $T/zombie-before $RUNS/zombie-smoke/before
    echo "killed API server pid $pid at $(date -u +%H:%M:%SZ) with kill -9" > $RUNS/zombie-smoke/fault.txt
    bash "$here/pack.sh" zombie zombie-smoke ;;
  *) log "unknown scenario $name"; exit 2 ;;
esac
log "scenario $name done in $(( $(date +%s) - t0 )) s"
