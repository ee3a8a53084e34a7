"""A server that compresses its answers (issue 32.1, 32.5): what a recording keeps is the decoded, redacted body and
the encoding it came with, so a key echoed in a gzip 401 is redacted and the recording replays the live verdict.

Before, the recorder kept the compressed bytes: redaction found nothing to remove (the key reached the recording,
inflated by anyone who reads it), and the replay answered those bytes with no Content-Encoding: live GREEN, its
own recording RED ("not JSON ... '\\x1f\\x08\\x00...'").
"""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from selftest.hostile.harness import API_KEY_ENV, KEY, leaks, run_contract
from selftest.hostile.server import HostileServer, gzipped

MODELS = {"object": "list", "data": [{"id": "smollm2", "object": "model", "owned_by": "vllm", "root": "smollm2",
                                      "max_model_len": 8192}]}


def _outcomes(run) -> dict[str, str]:
    return {t["nodeid"]: t["outcome"] for t in json.loads(run.files["reports/results.json"])["tests"]}


def _recorded(folder) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.glob("http-*.jsonl")) for line in path.read_text().splitlines()]


@pytest.mark.subprocess
def test_a_gzip_servers_recording_replays_to_the_live_verdict(tmp_path):
    routes = {"/version": gzipped({"version": "0.32.0"}), "/v1/models": gzipped(MODELS)}
    for folder in ("live", "replay"):
        (tmp_path / folder).mkdir()
    with HostileServer(routes) as server:
        live = run_contract(server, tmp_path / "live", args=("-m", "smoke", "--record", str(tmp_path / "rec")))
    assert live.rc == 0, live.terminal[-3000:]
    models = [e for e in _recorded(tmp_path / "rec") if e["url"].endswith("/v1/models")]
    assert models and json.loads(base64.b64decode(models[0]["body_b64"])) == MODELS  # decoded, not gzip bytes
    assert ["x-llmval-content-encoding", "gzip"] in models[0]["headers"], models[0]["headers"]
    # the same inventory, the server gone: the replay answers everything
    replayed = run_contract(server, tmp_path / "replay", args=("-m", "smoke", "--replay", str(tmp_path / "rec")))
    assert replayed.rc == live.rc, replayed.terminal[-3000:]
    assert _outcomes(replayed) == _outcomes(live)


@pytest.mark.subprocess
def test_a_key_echoed_in_a_gzip_401_body_reaches_no_recording_and_no_report(tmp_path):
    unauthorized = gzipped({"detail": f"invalid key {KEY} for this server"}, status=401)
    assert KEY.encode() not in gzip.compress(KEY.encode())  # the key is not in the bytes on the wire as such
    with HostileServer({"/v1/models": unauthorized, "/v1/chat/completions": unauthorized}) as server:
        run = run_contract(server, tmp_path, endpoint={"api_key_env": API_KEY_ENV, "request_timeout_s": 10},
                           env={API_KEY_ENV: KEY}, args=("-m", "smoke", "--record", str(tmp_path / "rec")))
    assert "HTTP 401" in run.files["reports/results.json"], run.terminal[-3000:]
    recorded = _recorded(tmp_path / "rec")
    bodies = {f"{e['url']} body": base64.b64decode(e["body_b64"]).decode("utf-8", "replace") for e in recorded}
    assert any("invalid key ***" in body for body in bodies.values()), bodies
    assert not leaks({**run.everything(), **bodies}, KEY)
