# Sourced by the bench scripts (bench_side_by_side.sh, correctness_under_load.sh, agentic_load.sh) after they set
# OUT, BASE and W: the suite from this checkout first on PYTHONPATH (the code that travelled is the code measured),
# vLLM from /tmp/site; a fresh work folder $W; t0 for the scripts' elapsed times.
export PYTHONPATH=$PWD/src:/tmp/site HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 PYTHONUNBUFFERED=1
PY=$(command -v python3)
mkdir -p "$OUT"; rm -rf "$W"; mkdir -p "$W"
t0=$(date +%s)

# bench_env [LINE...]: $W/env.txt: date, cores, load, versions, the GPU, the engine's version, model and command
# line; then the script's own lines (its workload).
bench_env() {
  {
    echo "date $(date -u +%FT%TZ)"; echo "nproc $(nproc)"; uptime; git rev-parse HEAD 2>/dev/null
    "$PY" -c "import vllm, llmval, sys; print('vllm', vllm.__version__, 'llmval', llmval.__file__, 'python', sys.version)"
    nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,utilization.gpu --format=csv
    curl -s "$BASE/version"; echo; curl -s "$BASE/v1/models"; echo
    pgrep -af "vllm|api_server" | cut -c1-300
    [ $# -eq 0 ] || printf '%s\n' "$@"
  } > "$W/env.txt" 2>&1
}

# engine_serving: true when $BASE answers /v1/models; otherwise says so (terminal and env.txt) and is false.
engine_serving() {
  curl -sf "$BASE/v1/models" > /dev/null && return 0
  echo "no engine serving at $BASE (start it with: bash scripts/gpu/serve.sh healthy)" | tee -a "$W/env.txt"
  return 1
}
