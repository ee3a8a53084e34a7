#!/bin/bash
# scripts/gpu/sglang/scenario.sh NAME...: SGLang 0.5.17 scenarios on the lent H200, in the order given, each
# recorded with --record and packed (recording, reports, engine log, GPU/process captures) into $OUT/NAME.tgz.
# Runs setup.sh first (a no-op once SGLang and the model are in /tmp, but the suite's install). README.md here
# lists them with the verdicts each must give; one device call takes as many as fit its 600 s.
#   healthy      start SGLang as the kit serves it (auto KV = bf16, triton); smoke; /metrics idle
#   contract     (after healthy) the whole contract, /metrics scraped idle, every 10 s under it, and after
#   fp8          restart with --kv-cache-dtype fp8_e5m2; smoke
#   ngram        restart with NGRAM speculation (8 draft tokens); smoke with h200-sglang-spec.toml; /metrics
#   torchnative  restart with --attention-backend torch_native; smoke
#   nowait       restart as healthy without waiting; smoke with --wait-ready=300 at once
#   sigstop      (after a start) SIGSTOP of sglang::scheduler; smoke; SIGCONT
#   kill9        (after a start) kill -9 of the sglang.launch_server pid only; smoke
#   launch       (no server of ours up) pytest -m smoke --launch: the suite starts and stops SGLang
#   sigkill      pytest -m smoke --launch killed with SIGKILL once SGLang is ready (../launch_sigkill.sh)
set -u
export LLMVAL_GPU_ENGINE=sglang
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"
LAUNCH_INVENTORY=inventories/h200-sglang-launch.toml
bash "$here/setup.sh" || exit 1
scrape() {  # DIR NAME: one /metrics scrape (body and the time it was taken)
  mkdir -p "$1"; curl -s -m 10 "http://127.0.0.1:$PORT/metrics" > "$1/$2.prom"; date -u +%H:%M:%S.%N >> "$1/times.txt"
  echo "$2" >> "$1/times.txt"
}
for name in "$@"; do
  t0=$(date +%s)
  case $name in
    healthy)
      bash "$here/serve.sh" healthy || exit 1
      RUN_TIMEOUT=120 bash "$here/../run.sh" healthy-smoke $INVENTORY -m smoke
      scrape $RUNS/healthy-smoke/metrics idle-after-smoke
      bash "$here/../pack.sh" healthy healthy-smoke ;;
    contract)
      w=$RUNS/contract-metrics; rm -rf $w; scrape $w before
      ( for i in $(seq 40); do sleep 10; scrape $w "under-load-$i"; done ) & scraper=$!
      RUN_TIMEOUT=480 bash "$here/../run.sh" contract $INVENTORY
      kill $scraper 2>/dev/null; scrape $w after; mv $w $RUNS/contract/metrics
      bash "$here/../pack.sh" contract contract ;;
    fp8)
      bash "$here/serve.sh" fp8 --kv-cache-dtype fp8_e5m2 || exit 1
      RUN_TIMEOUT=120 bash "$here/../run.sh" fp8-smoke $INVENTORY -m smoke
      bash "$here/../pack.sh" fp8 fp8-smoke ;;
    ngram)
      bash "$here/serve.sh" ngram --speculative-algorithm NGRAM --speculative-num-draft-tokens 8 || exit 1
      scrape $RUNS/ngram-metrics idle
      RUN_TIMEOUT=120 bash "$here/../run.sh" ngram-smoke $SPEC_INVENTORY -m smoke
      scrape $RUNS/ngram-metrics after-smoke; mv $RUNS/ngram-metrics $RUNS/ngram-smoke/metrics
      bash "$here/../pack.sh" ngram ngram-smoke ;;
    torchnative)
      bash "$here/serve.sh" torchnative --attention-backend torch_native || exit 1
      RUN_TIMEOUT=120 bash "$here/../run.sh" torchnative-smoke $INVENTORY -m smoke
      bash "$here/../pack.sh" torchnative torchnative-smoke ;;
    nowait)
      NOWAIT=1 bash "$here/serve.sh" nowait || exit 1
      RUN_TIMEOUT=420 bash "$here/../run.sh" nowait-smoke $INVENTORY -m smoke --wait-ready=300
      bash "$here/../pack.sh" nowait nowait-smoke ;;
    sigstop)
      sched=$(pgrep -f '^sglang::scheduler' | head -1)
      [ -n "$sched" ] || { log "sigstop: no sglang::scheduler running"; exit 1; }
      mkdir -p $T/sigstop-before; bash "$here/../capture.sh" $T/sigstop-before
      kill -STOP "$sched"; log "sigstop: kill -STOP $sched (sglang::scheduler)"
      RUN_TIMEOUT=180 bash "$here/../run.sh" sigstop-smoke $INVENTORY -m smoke
      kill -CONT "$sched"; log "sigstop: kill -CONT $sched"
      mv $T/sigstop-before $RUNS/sigstop-smoke/before
      echo "kill -STOP $sched (sglang::scheduler) before the run; kill -CONT after it" > $RUNS/sigstop-smoke/fault.txt
      bash "$here/../pack.sh" sigstop sigstop-smoke ;;
    kill9)
      [ -f $PIDFILE ] && kill -0 "$(cat $PIDFILE)" 2>/dev/null || { log "kill9: no running server to kill"; exit 1; }
      rm -rf $T/kill9-before; bash "$here/../capture.sh" $T/kill9-before
      pid=$(cat $PIDFILE); kill -9 "$pid"; log "kill9: kill -9 $pid (sglang.launch_server only, not its group)"
      for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      sleep 3  # the scheduler and detokenizer die with it (PR_SET_PDEATHSIG); the port closes
      RUN_TIMEOUT=180 bash "$here/../run.sh" kill9-smoke $INVENTORY -m smoke
      mv $T/kill9-before $RUNS/kill9-smoke/before
      echo "killed sglang.launch_server pid $pid at $(date -u +%H:%M:%SZ) with kill -9" > $RUNS/kill9-smoke/fault.txt
      rm -f $PIDFILE
      bash "$here/../pack.sh" kill9 kill9-smoke ;;
    launch)
      stop_started_engine  # a launch scenario must find the port free
      RUN_TIMEOUT=480 bash "$here/../run.sh" launch-smoke $LAUNCH_INVENTORY -m smoke --launch
      bash "$here/../pack.sh" launch launch-smoke ;;
    sigkill)
      stop_started_engine  # a launch scenario must find the port free
      bash "$here/../launch_sigkill.sh" sigkill-sglang $LAUNCH_INVENTORY ;;
    *) log "unknown scenario $name"; exit 2 ;;
  esac
  log "scenario $name done in $(( $(date +%s) - t0 )) s"
done
