# Sourced by every scripts/gpu/ script: where things live on the lent H200 and the environment vLLM runs with.
# /tmp survives between device commands while the machine is held; the repo copy (the cwd) is fresh each time.
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0
# never turn NVLink multicast on (shared hosts can be put out of service)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# LLMVAL_GPU_* override these only for a dry run elsewhere (selftest/gpu: the CPU engine on another port);
# on the H200 nothing is set and the inventories' paths and port hold.
T=${LLMVAL_GPU_TMP:-/tmp}
SITE=${LLMVAL_GPU_SITE:-/tmp/site}  # vLLM 0.24.0 and the wheels the image lacks (from the kit's bundle)
SUITE=$T/llmval-site      # this checkout, installed fresh by every command (setup.sh)
MODEL=${LLMVAL_GPU_MODEL:-/tmp/model}  # SmolLM2-135M-Instruct in bfloat16 (converted once from the GGUF)
LOG=$T/vllm.log           # the engine log (inventories/h200-vllm*.toml: logs = "file:/tmp/vllm.log")
PIDFILE=$T/vllm.pid       # the API server's pid (a setsid process-group leader)
RUNS=$T/runs              # one folder per run, packed into $OUT
PORT=${LLMVAL_GPU_PORT:-8000}
INVENTORY=${LLMVAL_GPU_INVENTORY:-inventories/h200-vllm.toml}
SPEC_INVENTORY=${LLMVAL_GPU_SPEC_INVENTORY:-inventories/h200-vllm-spec.toml}
# LLMVAL_GPU_ENGINE=sglang (exported by scripts/gpu/sglang/*.sh): the SGLang 0.5.17 kit's site, log, pid file,
# port and inventories instead (sglang/README.md); run.sh, capture.sh and pack.sh serve both engines.
if [ "${LLMVAL_GPU_ENGINE:-vllm}" = sglang ]; then
  SITE=${LLMVAL_GPU_SITE:-/tmp/sgsite}
  LOG=$T/sglang.log; PIDFILE=$T/sglang.pid; PORT=${LLMVAL_GPU_PORT:-30000}
  INVENTORY=${LLMVAL_GPU_INVENTORY:-inventories/h200-sglang.toml}
  SPEC_INVENTORY=${LLMVAL_GPU_SPEC_INVENTORY:-inventories/h200-sglang-spec.toml}
  # SGLang's JIT (tvm-ffi/nvcc) and Triton caches: a restart in the same lease reuses them
  export TVM_FFI_CACHE_DIR=$T/jit-cache/tvm-ffi TRITON_CACHE_DIR=$T/jit-cache/triton SGLANG_CACHE_DIR=$T/jit-cache/sglang
fi
export PORT
REPO=$(pwd)
OUT=${OUT:-/tmp/llmval-gpu-out}
mkdir -p "$OUT"
log() { echo "[gpu $(date -u +%H:%M:%S)] $*"; }
# Stop the engine serve.sh started, if any: its whole process group (TERM, up to 60 s, then KILL); its log is kept
# as <log>-prev.log. serve.sh (either engine) calls it before a start, the launch scenarios before --launch.
stop_started_engine() {
  [ -f $PIDFILE ] || return 0
  local pid; pid=$(cat $PIDFILE)
  kill -TERM -- -"$pid" 2>/dev/null
  for _ in $(seq 60); do kill -0 -- -"$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- -"$pid" 2>/dev/null; sleep 2
  rm -f $PIDFILE
  [ -f $LOG ] && cp $LOG "${LOG%.log}-prev.log"
}
