"""The endpoint serves exactly the model the inventory names (an old container on the port is caught) with its
context length."""

import pytest

pytestmark = [pytest.mark.serving, pytest.mark.smoke]


def test_served_model_matches_inventory(endpoint, engine, expect):
    served = sorted(str(card.get("id", "?")) for card in engine.model_cards)
    roots = sorted({str(card.get("root")) for card in engine.model_cards if card.get("root")})
    aliases, others = engine.model_aliases()  # --served-model-name a b: more names of the one model, not others
    expect(endpoint.name, "serving.model.id", expected=[endpoint.model], observed=served,
           ok=endpoint.model in served and not others,
           hint="another model is being served (an old container or unit on the port?): `docker ps` / the unit's "
                "--model and --served-model-name",
           evidence=f"/v1/models root={roots}" + (f"; aliases of {endpoint.model!r} (same root): {aliases}"
                                                  if aliases else ""))


@pytest.mark.needs("max_model_len")
def test_context_length_matches_inventory(endpoint, engine, expect):
    expect(endpoint.name, "serving.model.max_model_len", expected=endpoint.max_model_len,
           observed=engine.model_card().get("max_model_len"), hint="--max-model-len (vLLM) / --context-length (SGLang)")
