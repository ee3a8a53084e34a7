#!/usr/bin/env bash
# On the lent H200, in ONE command of at most 9 minutes (this script stays inside 5): the owners' multi-turn agentic
# load (issue 24.5) against the vLLM already serving (`bash scripts/gpu/serve.sh healthy` first: 127.0.0.1:8000,
# `smollm2`, vLLM 0.24.0 on PYTHONPATH=/tmp/site, --max-model-len 8192, prefix caching on as vLLM's default).
#   python -m llmval bench --agentic: SESSIONS sessions of seeded agent transcripts (llmval.agentic), each growing
#   its context turn by turn (TURNS turns, every turn = the previous prompt + one tool call and its result) on a
#   shared system prompt and tools; at each concurrency in CONCURRENCY: TTFT against context length and per turn,
#   the prefix-cache hit rate from vLLM's own counters (Δvllm:prefix_cache_hits / Δvllm:prefix_cache_queries),
#   goodput under TTFT_MS / TPOT_MS, and /metrics sampled every second (waiting, running, KV usage, preemptions).
# The suite runs from this checkout (PYTHONPATH=$PWD/src first), so the code that travelled is the code measured.
# Everything lands in $OUT: summary.json, agentic.log, env.txt, agentic.png and agentic.tgz (every turn of every
# run, the engine's /metrics before and after, the engine log's tail), at most 6 files.
set -u
OUT=${OUT:-/tmp/llmval-agentic-out}
BASE=${BASE_URL:-http://127.0.0.1:8000}
MODEL=${MODEL:-smollm2}
SESSIONS=${SESSIONS:-64}
TURNS=${TURNS:-24}                             # ~250 tokens a step: prompts from ~0.1k up to ~6-8k
CONCURRENCY=${CONCURRENCY:-8 32 64}
OUTPUT_LEN=${OUTPUT_LEN:-32}
TTFT_MS=${TTFT_MS:-200}                        # SLOs for the goodput share (a 135M model on an H200: generous)
TPOT_MS=${TPOT_MS:-20}
MAX_CONTEXT=${MAX_CONTEXT:-8000}               # serve.sh's --max-model-len 8192, less the answer and a margin
BUDGET_S=${BUDGET_S:-280}
W=/tmp/llmval-agentic
source "$(dirname "$0")/bench_common.sh"
bench_env "profile: sessions $SESSIONS turns $TURNS concurrency $CONCURRENCY output_len $OUTPUT_LEN SLO TTFT<=$TTFT_MS ms TPOT<=$TPOT_MS ms max_context $MAX_CONTEXT"
if ! engine_serving; then
  cp "$W/env.txt" "$OUT/"; exit 3
fi
curl -s "$BASE/metrics" > "$W/metrics-before.txt"
# shellcheck disable=SC2086
timeout "$BUDGET_S" "$PY" -m llmval bench --agentic --base-url "$BASE" --model "$MODEL" --sessions "$SESSIONS" \
  --turns "$TURNS" --concurrency $CONCURRENCY --output-len "$OUTPUT_LEN" --ttft-ms "$TTFT_MS" --tpot-ms "$TPOT_MS" \
  --max-context-tokens "$MAX_CONTEXT" --lock "$W/engine.lock" --out "$W/agentic" > "$W/agentic.log" 2>&1
echo "agentic rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$W/env.txt"
curl -s "$BASE/metrics" > "$W/metrics-after.txt"
uptime >> "$W/env.txt"; tail -c 200000 /tmp/vllm.log > "$W/vllm-engine-tail.log" 2>/dev/null
cp "$W/agentic/summary.json" "$OUT/summary.json" 2>/dev/null
cp "$W/agentic/agentic.png" "$OUT/" 2>/dev/null
cp "$W/agentic.log" "$W/env.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/agentic.tgz" -C /tmp llmval-agentic
ls -la "$OUT"; tail -30 "$W/agentic.log"
