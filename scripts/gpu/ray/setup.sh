#!/bin/bash
# scripts/gpu/ray/setup.sh: after ../setup.sh (vLLM, the model, the suite), (once) join the Ray parts copied to
# /tmp/rayparts and install their wheels into /tmp/raysite (one pip call into an empty folder: the `google` and
# `opencensus` namespace packages merge there; installing them into /tmp/site would replace its `google/`), then
# check that Ray and its dashboard's imports load beside vLLM.
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"; source "$here/common.sh"
t0=$(date +%s)
if [ ! -x "$RAY" ]; then
  ls /tmp/rayparts/ray.part* > /dev/null 2>&1 || { log "no /tmp/rayparts/ray.part*: copy the .ryN parts first"; exit 1; }
  rm -rf /tmp/rb && mkdir -p /tmp/rb && cat /tmp/rayparts/ray.part* | tar xf - -C /tmp/rb || exit 1
  rm -rf "$RAYSITE" && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$RAYSITE" \
    /tmp/rb/ray/whl/*.whl || exit 1
  log "Ray installed in $RAYSITE in $(( $(date +%s) - t0 )) s"
fi
python3 -c 'import ray, ray.dashboard.optional_deps, vllm; print("ray", ray.__version__, "vllm", vllm.__version__)' \
  2>&1 | tail -1
