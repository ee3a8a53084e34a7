#!/bin/bash
# scripts/gpu/run.sh NAME INVENTORY [pytest args...]: the suite (installed by setup.sh) in attach mode against the
# engine, with --record (every command and HTTP exchange) and reports, then the GPU/process captures and (in attach
# mode) serve.sh's engine log, into /tmp/runs/NAME. Prints the run's tail. The caller packs /tmp/runs/NAME* into $OUT.
set -u
source "$(dirname "$0")/common.sh"
name=$1; inv=$(readlink -f "$2"); shift 2
w=$RUNS/$name; rm -rf "$w"; mkdir -p "$w"
t0=$(date +%s)
(cd "$REPO" && PYTHONPATH=$SUITE:$SITE timeout "${RUN_TIMEOUT:-420}" python3 -m pytest --inventory="$inv" \
   --record "$w/rec" --reports "$w/reports" -p no:xdist -p no:cacheprovider "$@") > "$w/pytest.out" 2>&1
rc=$?
echo "rc=$rc wall=$(( $(date +%s) - t0 ))s args=$*" | tee "$w/rc.txt"
tail -30 "$w/pytest.out"
bash "$(dirname "$0")/capture.sh" "$w/after"
cp "$inv" "$w/inventory.toml"
# The engine log of serve.sh's server belongs to an attach run only: a --launch run started its own engine, whose
# output is in its reports (reports/launch/), and $LOG is then a server of an earlier scenario (the kill9 one).
case " $* " in
  *" --launch "*) ;;
  *) cp $LOG "$w/$(basename $LOG)" 2>/dev/null; cp $PIDFILE "$w/$(basename $PIDFILE)" 2>/dev/null ;;
esac
exit 0
