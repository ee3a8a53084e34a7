# Sourced by every scripts/gpu/ray/ script, after ../common.sh: where Ray lives on the lent H200 and the two nodes.
# The Sparks' shape on one machine: the head on 127.0.1.1 and a second raylet on 127.0.1.2 (the loopback range
# stands in for the IB subnet 192.168.200.0/24; Ray rewrites 127.0.0.1 itself to the machine's address, so
# neither node uses it). inventories/h200-vllm-ray*.toml name these addresses.
RAYSITE=${LLMVAL_GPU_RAYSITE:-$T/raysite}   # Ray 2.60.0 and its dashboard's wheels (ray-pins.txt), from the .ryN parts
RAY=$RAYSITE/bin/ray
HEAD_IP=127.0.1.1
NODE2_IP=127.0.1.2
RAY_PORT=${LLMVAL_GPU_RAY_PORT:-6379}
# VLLM_HOST_IP: vLLM's older Ray executor asks for a bundle on `node:<its own address>`; unset, that is the machine's
# address, which no node has (both are on the loopback range), and the placement group never forms
export RAY_ADDRESS=$HEAD_IP:$RAY_PORT RAY_USAGE_STATS_ENABLED=0 VLLM_HOST_IP=$HEAD_IP
# vLLM and Ray side by side for everything started from here: `ray start` passes its environment to the workers
# it spawns (the model's actor imports vLLM), the suite's `ray list ...` needs the CLI on PATH
export PYTHONPATH=$SITE:$RAYSITE${PYTHONPATH:+:$PYTHONPATH} PATH=$RAYSITE/bin:$PATH
# raylet pids by node address (`--node_ip_address=` is one of the raylet's own arguments)
raylet_pid() { pgrep -f "[r]aylet/raylet .*--node_ip_address=$1 " | head -1; }
# alive nodes `ray list nodes` reports (0 when it cannot be asked)
alive_nodes() {
  "$RAY" list nodes --format json 2>/dev/null | python3 -c \
    'import json,sys; print(sum(n["state"] == "ALIVE" for n in json.load(sys.stdin)))' 2>/dev/null || echo 0
}
