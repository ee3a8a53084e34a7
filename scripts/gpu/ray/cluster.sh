#!/bin/bash
# scripts/gpu/ray/cluster.sh start|stop|kill-node2|start-node2: the two-node Ray cluster on the lent H200.
#   start        head on 127.0.1.1 (port 6379, the GPU, the dashboard on 127.0.0.1:8265) and the second raylet on
#                127.0.1.2 (--num-gpus 0, 2 CPUs), both with RAY_memory_monitor_refresh_ms=0 (the Sparks' setting);
#                waits until `ray list nodes` shows 2 ALIVE (at most 90 s)
#   start-node2  only the second raylet; MONITOR_ON=1 starts it with Ray's memory monitor left on (the variable unset)
#   kill-node2   kill -9 of the second raylet only (`ray stop` would stop both: one machine), then wait until Ray
#                reports it DEAD (its health check gives up after ~15 s; at most 90 s)
#   stop         ray stop --force (every Ray process of the machine)
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"; source "$here/common.sh"
wait_alive() {  # N: until N nodes are ALIVE
  local t0; t0=$(date +%s)
  until [ "$(alive_nodes)" = "$1" ]; do
    [ $(( $(date +%s) - t0 )) -gt 90 ] && { log "ray: not $1 ALIVE nodes after 90 s"; "$RAY" status 2>&1 | tail -20; return 1; }
    sleep 1
  done
  log "ray: $1 ALIVE nodes after $(( $(date +%s) - t0 )) s"
}
start_node2() {
  if [ -n "${MONITOR_ON:-}" ]; then
    env -u RAY_memory_monitor_refresh_ms "$RAY" start --address "$RAY_ADDRESS" --node-ip-address $NODE2_IP \
      --num-gpus 0 --num-cpus 2 --disable-usage-stats > $T/ray-node2.log 2>&1
  else
    RAY_memory_monitor_refresh_ms=0 "$RAY" start --address "$RAY_ADDRESS" --node-ip-address $NODE2_IP \
      --num-gpus 0 --num-cpus 2 --disable-usage-stats > $T/ray-node2.log 2>&1
  fi || { log "ray: the second raylet did not start"; tail -20 $T/ray-node2.log; return 1; }
}
case ${1:?usage: cluster.sh start|stop|kill-node2|start-node2} in
  start)
    "$RAY" stop --force > /dev/null 2>&1
    RAY_memory_monitor_refresh_ms=0 "$RAY" start --head --node-ip-address $HEAD_IP --port $RAY_PORT --num-gpus 1 \
      --dashboard-host 127.0.0.1 --disable-usage-stats > $T/ray-head.log 2>&1 \
      || { log "ray: the head did not start"; tail -30 $T/ray-head.log; exit 1; }
    start_node2 || exit 1
    wait_alive 2 || exit 1 ;;
  start-node2)
    start_node2 || exit 1
    wait_alive 2 || exit 1 ;;
  kill-node2)
    pid=$(raylet_pid $NODE2_IP)
    [ -n "$pid" ] || { log "ray: no raylet on $NODE2_IP"; exit 1; }
    log "ray: kill -9 $pid (the raylet of $NODE2_IP)"; kill -9 "$pid"
    t0=$(date +%s)
    until "$RAY" list nodes --format json 2>/dev/null | grep -q '"DEAD"'; do
      [ $(( $(date +%s) - t0 )) -gt 90 ] && { log "ray: $NODE2_IP not DEAD after 90 s"; exit 1; }
      sleep 1
    done
    log "ray: $NODE2_IP DEAD after $(( $(date +%s) - t0 )) s" ;;
  stop)
    "$RAY" stop --force 2>&1 | tail -2 ;;
  *) log "unknown cluster command $1"; exit 2 ;;
esac
