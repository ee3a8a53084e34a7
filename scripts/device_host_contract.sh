#!/usr/bin/env bash
# Run the host contract ON a real NVIDIA GPU host (the lent H200 x2 machine) and keep what it saw:
#   1. a 2-GPU NCCL all-reduce with NCCL_P2P_DISABLE=1 (kpro6's setting), NCCL INFO into /tmp/llmval-nccl/;
#   2. tests/hosts with selftest/data/inventories/h200x2.toml, recorded (--record) for the offline replay;
#   3. tests/hosts with the deliberately wrong h200x2-wrong.toml (expects SM120 and 4 GPUs).
# Python packages the machine lacks travel as wheels in .whl/ (see the device tool's README).
set -u
OUT=${OUT:-/tmp/llmval-device-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD/src
rm -rf /tmp/llmval-nccl && mkdir -p /tmp/llmval-nccl
cat > /tmp/allreduce.py <<'PY'
import os, torch, torch.distributed as dist
rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
t = torch.full((1 << 20,), float(rank + 1), device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
print(f"rank {rank} ok={bool(torch.all(t == world * (world + 1) / 2).item())}", flush=True)
dist.destroy_process_group()
PY
NGPU=$(timeout 30 nvidia-smi -L | grep -c '^GPU')
timeout 120 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET,P2P,SHM NCCL_P2P_DISABLE=1 \
  "NCCL_DEBUG_FILE=/tmp/llmval-nccl/nccl.%h.%p.log" \
  python3 -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node="$NGPU" /tmp/allreduce.py \
  > "$OUT/allreduce.txt" 2>&1
echo "allreduce rc=$?" >> "$OUT/allreduce.txt"
run() {  # NAME INVENTORY [pytest args...]
  local name=$1 inventory=$2; shift 2
  timeout 300 python3 -m pytest tests/hosts -p no:cacheprovider -p no:randomly --inventory "$inventory" \
    --reports "/tmp/llmval-reports-$name" -q -rA "$@" > "$OUT/$name.txt" 2>&1
  echo "pytest rc=$?" >> "$OUT/$name.txt"
}
run right selftest/data/inventories/h200x2.toml --record /tmp/llmval-record
run wrong selftest/data/inventories/h200x2-wrong.toml
cat /tmp/llmval-record/commands-*.jsonl > "$OUT/commands-real.jsonl"
cp /tmp/llmval-reports-right/results.json "$OUT/results-right.json"
cp /tmp/llmval-reports-right/status.md "$OUT/status-right.md"
tail -5 "$OUT/right.txt" "$OUT/wrong.txt" "$OUT/allreduce.txt"
