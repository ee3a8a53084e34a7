#!/bin/bash
# scripts/gpu/sigkill.sh NAME INVENTORY: the CI job killed at its time limit. Run `pytest -m smoke --launch` with
# INVENTORY (the suite starts the engine itself), wait until the engine answers /v1/models, `kill -9` pytest, then
# watch every 0.5 s (at most 60 s) until no compute app is on the GPU and no process of the launched stack is left;
# captures before the kill and after. Writes /tmp/runs/NAME (sigkill.txt: the timeline). The caller packs it.
# Engine-neutral: PORT and the stack's process pattern come from common.sh / STACK_PATTERN.
set -u
source "$(dirname "$0")/common.sh"
name=$1; inv=$(readlink -f "$2")
pattern=${STACK_PATTERN:?STACK_PATTERN: the launched stack's processes (ps args, an ERE)}
w=$RUNS/$name; rm -rf "$w"; mkdir -p "$w"
cp "$inv" "$w/inventory.toml"
t0=$(date +%s%3N)  # milliseconds
stamp() { local ms=$(( $(date +%s%3N) - t0 )); printf '%4d.%03d s  %s\n' $((ms / 1000)) $((ms % 1000)) "$*" | tee -a "$w/sigkill.txt"; }
(cd "$REPO" && PYTHONPATH=$SUITE:$SITE exec python3 -m pytest --inventory="$inv" --launch -m smoke \
   --record "$w/rec" --reports "$w/reports" -p no:xdist -p no:cacheprovider) > "$w/pytest.out" 2>&1 &
suite=$!
stamp "pytest --launch started: pid $suite"
until curl -sf "http://127.0.0.1:$PORT/v1/models" > /dev/null; do
  sleep 1
  kill -0 $suite 2>/dev/null || { stamp "pytest exited before the engine was ready"; tail -30 "$w/pytest.out"; exit 1; }
  [ $(( $(date +%s%3N) - t0 )) -gt 420000 ] && { stamp "engine not ready after 420 s"; kill -9 $suite; exit 1; }
done
stamp "engine ready on port $PORT"
bash "$(dirname "$0")/capture.sh" "$w/before"
ps -eo pid,pgid,sid,ppid,etimes,args | grep -E "$pattern|pytest" | grep -v grep > "$w/before/stack-ps.txt"
kill -9 $suite
stamp "kill -9 $suite (pytest)"
for _ in $(seq 120); do
  apps=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>/dev/null)
  left=$(ps -eo pid,pgid,args | grep -E "$pattern" | grep -v -E "grep|sigkill.sh")
  [ -z "$apps" ] && [ -z "$left" ] && { stamp "GPU empty and no stack process left"; break; }
  sleep 0.5
done
[ -n "$apps$left" ] && stamp "after 60 s still: apps=[$apps] processes=[$left]"
bash "$(dirname "$0")/capture.sh" "$w/after"
tail -20 "$w/pytest.out" > "$w/pytest-tail.txt"
# leave nothing for the next scenario whatever happened (the proof above is already written)
[ -n "$left" ] && echo "$left" | awk '{print $2}' | sort -u | while read -r g; do kill -KILL -- -"$g" 2>/dev/null; done
cat "$w/sigkill.txt"
exit 0
