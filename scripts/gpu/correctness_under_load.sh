#!/usr/bin/env bash
# On the lent H200, in ONE command of at most 9 minutes (this script stays inside 6): correctness under load
# (issue 24.4) against the vLLM already serving (`bash scripts/gpu/serve.sh healthy` first: 127.0.0.1:8000,
# `smollm2`, vLLM 0.24.0 on PYTHONPATH=/tmp/site, --max-model-len 8192, hermes tool parser).
#   python -m llmval bench --correctness-under-load: at each concurrency in CONCURRENCY, NIAH cells (NIAH_LENGTHS x
#   NIAH_DEPTHS, plain, 7-digit needles, the nightly grid's prompts for seed 0) and strict tool calls (catalogue
#   categories TOOL_CATEGORIES, TOOL_CASES each, tool_choice=required) asked at temperature 0 idle, then while C
#   closed-loop streams (in INPUT_LEN / out OUTPUT_LEN, EOS ignored) hold the engine, then idle again. Each probe's
#   three answers are judged (needle found; call valid; exactly the expected values) and compared; a probe counts as
#   under load only when the load's mean streams in flight over its ask were >= 0.9 C.
# The suite runs from this checkout (PYTHONPATH=$PWD/src first), so the code that travelled is the code measured.
# Everything lands in $OUT: summary.json (one row per C), correctness.log, env.txt and correctness.tgz (every
# probe's three answers and texts per C, the engine's /metrics before and after, the engine log's tail): 4 files.
set -u
OUT=${OUT:-/tmp/llmval-correctness-out}
BASE=${BASE_URL:-http://127.0.0.1:8000}
MODEL=${MODEL:-smollm2}
CONCURRENCY=${CONCURRENCY:-16 64 256}
INPUT_LEN=${INPUT_LEN:-128}
OUTPUT_LEN=${OUTPUT_LEN:-256}                  # long enough that the streams outlast the probes' asks
NIAH_LENGTHS=${NIAH_LENGTHS:-1024 4096 8192}   # 8192 is filled to max_model_len - max_tokens - margin = 8112
NIAH_DEPTHS=${NIAH_DEPTHS:-0 0.25 0.5 0.75 1}
TOOL_CATEGORIES=${TOOL_CATEGORIES:-flat nested enum bigint parallel}
TOOL_CASES=${TOOL_CASES:-2}
BUDGET_S=${BUDGET_S:-330}
W=/tmp/llmval-correctness
source "$(dirname "$0")/bench_common.sh"
bench_env "probes: niah $NIAH_LENGTHS x depths $NIAH_DEPTHS; tools $TOOL_CATEGORIES x $TOOL_CASES strict/required; \
load: C in $CONCURRENCY, in $INPUT_LEN out $OUTPUT_LEN"
if ! engine_serving; then
  cp "$W/env.txt" "$OUT/"; exit 3
fi
curl -s "$BASE/metrics" > "$W/metrics-before.txt"
# shellcheck disable=SC2086
timeout "$BUDGET_S" "$PY" -m llmval bench --correctness-under-load --base-url "$BASE" --model "$MODEL" \
  --concurrency $CONCURRENCY --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --niah-lengths $NIAH_LENGTHS \
  --niah-depths $NIAH_DEPTHS --tool-categories $TOOL_CATEGORIES --tool-cases-per-category "$TOOL_CASES" \
  --tool-variant strict --tool-choice required --timeout-s 120 --hold-timeout-s 60 \
  --lock "$W/engine.lock" --out "$W/correctness" > "$W/correctness.log" 2>&1
echo "correctness rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$W/env.txt"
curl -s "$BASE/metrics" > "$W/metrics-after.txt"
uptime >> "$W/env.txt"; tail -c 200000 /tmp/vllm.log > "$W/vllm-engine-tail.log" 2>/dev/null
cp "$W/correctness/summary.json" "$OUT/summary.json" 2>/dev/null
cp "$W/correctness.log" "$W/env.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/correctness.tgz" -C /tmp llmval-correctness
ls -la "$OUT"; tail -8 "$W/correctness.log" | cut -c1-2000
