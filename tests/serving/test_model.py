"""The endpoint is alive and serves exactly the model the inventory names (the stale-GLM catch)."""

import pytest

from llmval.http import get_json

pytestmark = [pytest.mark.serving, pytest.mark.smoke]


def test_served_model_matches_inventory(endpoint, client, expect):
    models = get_json(client, "/v1/models", endpoint=endpoint.name)
    served = sorted(m.get("id", "?") for m in models.get("data", []))
    expect(endpoint.name, "serving.model.id", expected=[endpoint.model], observed=served,
           hint="a stale container may be serving an old model; check `docker ps` / the unit's --model")


@pytest.mark.needs("max_model_len")
def test_context_length_matches_inventory(endpoint, client, expect):
    models = get_json(client, "/v1/models", endpoint=endpoint.name)
    card = next((m for m in models.get("data", []) if m.get("id") == endpoint.model), {})
    expect(endpoint.name, "serving.model.max_model_len", expected=endpoint.max_model_len,
           observed=card.get("max_model_len"), hint="--max-model-len / --context-length")
