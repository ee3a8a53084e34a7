#!/bin/bash
# scripts/gpu/pack.sh NAME DIR...: pack the given folders under /tmp/runs into $OUT/NAME.tgz (what comes back).
set -u
source "$(dirname "$0")/common.sh"
name=$1; shift
tar czf "$OUT/$name.tgz" -C $RUNS "$@" && ls -la "$OUT/$name.tgz"
