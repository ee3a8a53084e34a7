#!/usr/bin/env bash
# On the lent H200, in ONE command of at most 9 minutes (this script stays inside 8): the suite's load generator and
# `vllm bench serve` side by side against the vLLM already serving (gpu-kit dev_serve.sh: 127.0.0.1:8000, `smollm2`,
# vLLM and `vllm bench serve` on PYTHONPATH=/tmp/site, tokenizer /tmp/model), then both clients' ceilings and the
# suite's open-loop pacing against the calibration source on the same 16 cores.
#   1. python -m llmval bench --side-by-side: C=1,16,64,256 and Poisson rates up to the knee, ABBA rounds within
#      a 310 s budget -> summary.json (rows with ratio and 95 % CI), raw per-request JSON of both tools, versions;
#   2. python -m llmval bench --ceiling --ceiling-ladder gpu: events/s each client still times right (<= 75 s);
#   3. python -m llmval bench --pacing: achieved rate and schedule lag at 10..1000 req/s (<= 45 s).
# The suite runs from this checkout (PYTHONPATH=$PWD/src first), so the code that travelled is the code measured.
# Everything lands in $OUT: summary.json, the three logs and bench-side-by-side.tgz.partN (all of it, in 15 MiB parts;
# `cat bench-side-by-side.tgz.part* | tar xz`), at most 8 files.
set -u
OUT=${OUT:-/tmp/llmval-bench-out}
BASE=${BASE_URL:-http://127.0.0.1:8000}
MODEL=${MODEL:-smollm2}
TOKENIZER=${TOKENIZER:-/tmp/model}
BUDGET_S=${BUDGET_S:-310}                      # the side-by-side's budget (its timeout is 25 s more)
CONCURRENCY=${CONCURRENCY-1 16 64 256}           # CONCURRENCY="": the rate points only
STEPS=${STEPS:-side-by-side ceiling pacing}   # re-measuring the side by side alone: STEPS=side-by-side
# the side by side's shape (defaults: as measured at 16:13 UTC on 2026-12-01); RATES: auto, none or "30,59"
RATES=${RATES:-auto} RUN_SECONDS=${RUN_SECONDS:-0} RATE_SECONDS=${RATE_SECONDS:-4}
MIN_ROUNDS=${MIN_ROUNDS:-2} MAX_ROUNDS=${MAX_ROUNDS:-6}
# CLIENT_CPUS=8-15: both clients (and the calibration source) on those CPUs (taskset), apart from ENGINE_CPUS
PIN=(); [ -n "${CLIENT_CPUS:-}" ] && PIN=(taskset -c "$CLIENT_CPUS")
# STEPS=source: the same side by side against the calibration source (truth known), each point with the engine's
# timing there as the side-by-side summaries in SOURCE_LIKE measured it (default: this call's own summary)
SOURCE_LIKE=${SOURCE_LIKE:-}
SOURCE_CPUS=${SOURCE_CPUS:-${ENGINE_CPUS:-}}       # the source where the engine ran
W=/tmp/llmval-bench${TAG:+-$TAG}               # TAG: keep each call's work folder (a later source step reads it)
source "$(dirname "$0")/bench_common.sh"
bench_env
echo "steps $STEPS; concurrency $CONCURRENCY; rates $RATES; run-seconds $RUN_SECONDS; rate-seconds $RATE_SECONDS;" \
  "rounds $MIN_ROUNDS..$MAX_ROUNDS; budget $BUDGET_S s; engine CPUs ${ENGINE_CPUS:-any}; client CPUs" \
  "${CLIENT_CPUS:-any}; source CPUs ${SOURCE_CPUS:-any}; source like ${SOURCE_LIKE:-this call}" >> "$W/env.txt"
if [[ " $STEPS " == *" side-by-side "* ]] && ! engine_serving; then
  tar czf "$OUT/bench-side-by-side.tgz" -C /tmp "${W#/tmp/}"; exit 3
fi
shape=(--input-len 128 --output-len 128 --rates "$RATES" --run-seconds "$RUN_SECONDS" --rate-seconds "$RATE_SECONDS"
       --min-rounds "$MIN_ROUNDS" --max-rounds "$MAX_ROUNDS" --budget-s "$BUDGET_S" --tokenizer "$TOKENIZER"
       --engine-python "$PY" --lock "$W/engine.lock")
if [[ " $STEPS " == *" side-by-side "* ]]; then
  # shellcheck disable=SC2086
  timeout $(( BUDGET_S + 25 )) "${PIN[@]}" "$PY" -m llmval bench --side-by-side --base-url "$BASE" --model "$MODEL" \
    --concurrency $CONCURRENCY "${shape[@]}" --out "$W/side-by-side" > "$W/side-by-side.log" 2>&1
  echo "side-by-side rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$W/env.txt"
fi
if [[ " $STEPS " == *" source "* ]]; then
  # shellcheck disable=SC2086
  timeout $(( BUDGET_S + 25 )) "${PIN[@]}" "$PY" -m llmval bench --side-by-side --calibration-source \
    --source-like ${SOURCE_LIKE:-$W/side-by-side/summary.json} ${SOURCE_CPUS:+--source-cpus "$SOURCE_CPUS"} \
    --concurrency $CONCURRENCY "${shape[@]}" \
    --out "$W/source" > "$W/source.log" 2>&1
  echo "source rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$W/env.txt"
fi
if [[ " $STEPS " == *" ceiling "* ]]; then
  timeout 75 "$PY" -m llmval bench --ceiling --ceiling-ladder gpu --engine-python "$PY" --tokenizer "$TOKENIZER" \
    --lock "$W/engine.lock" --out "$W/ceiling" > "$W/ceiling.log" 2>&1
  echo "ceiling rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$W/env.txt"
fi
if [[ " $STEPS " == *" pacing "* ]]; then
  timeout 45 "$PY" -m llmval bench --pacing --pacing-seconds 2 --tokenizer "$TOKENIZER" --engine-python "$PY" \
    --lock "$W/engine.lock" --out "$W/pacing" > "$W/pacing.log" 2>&1
  echo "pacing rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$W/env.txt"
fi
uptime >> "$W/env.txt"; tail -c 200000 /tmp/vllm.log > "$W/vllm-engine-tail.log" 2>/dev/null
cp "$W/side-by-side/summary.json" "$OUT/summary.json" 2>/dev/null
cp "$W/source/summary.json" "$OUT/source-summary.json" 2>/dev/null
cp "$W/side-by-side.log" "$W/source.log" "$W/ceiling.log" "$W/pacing.log" "$OUT/" 2>/dev/null
# at most 8 files of 16 MiB come back: the tarball in 15 MiB parts (cat bench-side-by-side.tgz.part* | tar xz)
tar czf /tmp/bench-side-by-side.tgz -C /tmp "${W#/tmp/}" && split -b 15M -d -a 1 /tmp/bench-side-by-side.tgz \
  "$OUT/bench-side-by-side.tgz.part" && rm -f /tmp/bench-side-by-side.tgz
ls -la "$OUT"
for f in side-by-side source ceiling pacing; do [ -f "$W/$f.log" ] && { echo "== $f"; tail -36 "$W/$f.log"; }; done
