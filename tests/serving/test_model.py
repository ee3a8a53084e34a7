"""The endpoint serves exactly the model the inventory names (an old container on the port is caught) with its
context length, and the weights behind that name are that model's: the served name and the loaded weights' path,
each from every source the engine has, agree (`llmval.engines.identity`)."""

import pytest

from llmval.engines import NotExposed
from llmval.engines.identity import contradictions

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


def test_served_model_is_the_declared_weights(endpoint, engine, expect):
    evidence = engine.model_evidence()
    paths = {e.source: e.path for e in evidence if e.path}
    if not paths:
        expect.cannot(endpoint.name, "serving.model.identity", NotExposed(
            f"[{endpoint.name}] no source names the weights behind {endpoint.model!r} (a second source beside the "
            "served name): declare `logs` for a vLLM endpoint; a plain OpenAI server names none"))
    declared = endpoint.expect.model_path
    found = contradictions(endpoint.model, declared, evidence, aliases=engine.model_aliases()[0])
    expect(endpoint.name, "serving.model.identity",
           expected=f"{endpoint.model!r} from the weights " + (repr(declared) if declared else "of its model family")
           + f", by the name and >= 1 weights' path ({len(evidence)} sources)",
           observed=found or paths, ok=not found,
           hint="another model is behind the served name (a stale container or unit behind the alias?): compare the "
                "engine's --model / --model-path with the inventory; declare expect.model_path to pin the weights",
           evidence=" | ".join(f"{e.source}: {e.quote}" for e in evidence))


@pytest.mark.needs("max_model_len")
def test_context_length_matches_inventory(endpoint, engine, expect):
    expect(endpoint.name, "serving.model.max_model_len", expected=endpoint.max_model_len,
           observed=engine.model_card().get("max_model_len"), hint="--max-model-len (vLLM) / --context-length (SGLang)",
           depends_on=("serving.model.id",))  # another model on the port has its own context length
