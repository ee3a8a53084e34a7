#!/bin/bash
# scripts/gpu/fleet_measure.sh: issue 35.2, on the lent machine's CPUs (no GPU, no engine): the smoke of
# `tests/hosts` over stand-in hosts (fake nvidia-smi/docker answering in LATENCY s, selftest/hosts/standin.py) in
# one process and under `-n N`, by `python -m selftest.hosts.measure_smoke`, one JSON line per run appended to
# $OUT/fleet.jsonl as it ends (a call killed at its limit still brings back what it measured), the machine in
# $OUT/fleet-env.txt. Needs no engine: carry [".flw"] (fleet_wheels.sh: the suite's wheels the bare image lacks,
# ~4 MB) on a fresh machine, or run it after setup.sh in the same lease; installs this checkout again.
#
# Order, most informative first: 1 host in one process (the reference), then every HOSTS size across WORKERS,
# then SMALL hosts in one process and under `-n auto` (4: one process; 128: the first size given 2 workers),
# then the first round again while the budget lasts.
# No run starts that measure_smoke predicts would end past BUDGET_S seconds after this script started, and a run
# still going then is stopped (its line says "timed_out": true).
# Env: HOSTS ("256 64 1024"), WORKERS ("0 16 8 4"), SMALL ("4 128"; "" for none), LATENCY (0.5), REPEAT (2: rounds of
# HOSTS x WORKERS), BUDGET_S (500; the device call limit is 600).
set -u
source "$(dirname "$0")/common.sh"
HOSTS=${HOSTS:-256 64 1024}; WORKERS=${WORKERS:-0 16 8 4}; SMALL=${SMALL-4 128}; LATENCY=${LATENCY:-0.5}
REPEAT=${REPEAT:-2}; BUDGET_S=${BUDGET_S:-500}
SECONDS=0
bash "$(dirname "$0")/install_suite.sh" || exit 1
{
  echo "date: $(date -u +%FT%TZ)"; echo "nproc: $(nproc)"; echo "loadavg: $(cat /proc/loadavg)"
  echo "python: $(python3 --version 2>&1) ($(command -v python3))"
  PYTHONPATH=$SUITE:$SITE python3 -c "
import importlib.metadata as m
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return 'MISSING'
print(' '.join(f'{d}=={version(d)}' for d in ('pytest', 'pytest-xdist', 'execnet', 'pluggy', 'psutil', 'pytest-llmval')))
" 2>&1
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"; echo "memory: $(grep MemTotal /proc/meminfo)"
  echo "CPUs as xdist's -n auto counts them (psutil physical, logical; else os): $(PYTHONPATH=$SUITE:$SITE python3 -c "
try:
    import psutil; print(psutil.cpu_count(logical=False), psutil.cpu_count())
except ImportError:
    import os; print('no psutil', len(os.sched_getaffinity(0)))" 2>&1)"
  echo "tools the stand-ins use for real: $(for t in ip fuser find sha256sum; do printf '%s=%s ' $t "$(command -v $t || echo MISSING)"; done)"
  echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-}"
  echo "plan: HOSTS=$HOSTS WORKERS=$WORKERS SMALL=$SMALL LATENCY=$LATENCY REPEAT=$REPEAT BUDGET_S=$BUDGET_S"
  echo "install_suite.sh took ${SECONDS} s"
} > "$OUT/fleet-env.txt"
touch "$OUT/fleet.jsonl"
# one measure_smoke call per step, each with what is left of the budget (it skips what would not fit)
measure() {  # measure ROUNDS HOSTS... -- WORKERS...
  local rounds=$1; shift; local hosts=() workers=()
  while [ "$1" != -- ]; do hosts+=("$1"); shift; done; shift; workers=("$@")
  local left=$(( BUDGET_S - SECONDS ))
  [ "$left" -ge 5 ] || { log "budget spent: hosts ${hosts[*]} workers ${workers[*]} not started"; return; }
  log "hosts ${hosts[*]} x workers ${workers[*]} x $rounds, ${left} s left"
  PYTHONPATH=$SUITE:$SITE python3 -m selftest.hosts.measure_smoke --hosts "${hosts[@]}" --workers "${workers[@]}" \
    --latency $LATENCY --repeat "$rounds" --budget "$left" --out "$OUT/fleet.jsonl" > /dev/null 2>> "$OUT/fleet-err.txt"
  tail -n +$(( lines + 1 )) "$OUT/fleet.jsonl" | cut -c1-300; lines=$(wc -l < "$OUT/fleet.jsonl")
}
lines=0
measure 1 1 -- 0
# shellcheck disable=SC2086  # word splitting of the lists is meant
measure 1 $HOSTS -- $WORKERS
[ -n "$SMALL" ] && measure 1 $SMALL -- 0 auto
[ "$REPEAT" -gt 1 ] && measure $(( REPEAT - 1 )) $HOSTS -- $WORKERS
# medians per (hosts, workers) over every round, and each over 1 host in one process
PYTHONPATH=$SUITE:$SITE python3 -c "
import json, sys
from selftest.hosts.measure_smoke import summarize
runs = [row for row in map(json.loads, open(sys.argv[1])) if 'wall_s' in row]
print('\\n'.join(json.dumps(row) for row in summarize(runs)))" "$OUT/fleet.jsonl" > "$OUT/fleet-summary.jsonl" 2>> "$OUT/fleet-err.txt"
log "done in ${SECONDS} s: $(grep -c '"wall_s"' "$OUT/fleet.jsonl") runs, $(grep -c '"skipped": true' "$OUT/fleet.jsonl") skipped, $(grep -c '"timed_out": true' "$OUT/fleet.jsonl") stopped"
echo "total: ${SECONDS} s" >> "$OUT/fleet-env.txt"
[ -s "$OUT/fleet-err.txt" ] && { log "measure_smoke's errors:"; tail -20 "$OUT/fleet-err.txt"; }
exit 0
