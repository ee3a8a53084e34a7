"""The engine's own tokenizer endpoint answers: perf and the accuracy grids calibrate prompt lengths with
`POST /tokenize`. Where it is there but broken they count by `usage.prompt_tokens` instead (and say so), so a
broken /tokenize is reported here, as its own finding, not as perf or a grid that could not run."""

import pytest

from llmval.core.errors import TokenizeFailed
from llmval.engines import NotExposed

pytestmark = [pytest.mark.serving]


def _calibrated_by_tokenize(inventory, endpoint) -> list[str]:
    """The inventory's sections whose prompt lengths are counted with this endpoint's /tokenize."""
    sections = [("perf", inventory.perf), ("niah", inventory.niah), ("agentic", inventory.agentic)]
    return [f"[[{name}]]" for name, specs in sections if any(s.endpoint == endpoint.name for s in specs)]


def test_tokenize_answers_with_token_ids(endpoint, engine, inventory, expect):
    users = _calibrated_by_tokenize(inventory, endpoint)
    if not users:
        pytest.skip(f"no perf gate or accuracy grid of {endpoint.name} counts prompt lengths with /tokenize")
    try:
        fact = engine.tokenize_probe()
    except NotExposed as error:
        pytest.skip(f"{error}: prompt lengths are estimated (or counted by usage) instead")
    except TokenizeFailed as error:
        expect(endpoint.name, "serving.tokenize", expected="POST /tokenize answers with token ids",
               observed=str(error), ok=False,
               hint=" ".join(filter(None, (
                   f"{' and '.join(users)} counted prompt tokens with usage.prompt_tokens of 1-token completions "
                   "instead (what the server bills; one extra request per count); clients that use /tokenize "
                   "(context budgeting) get errors.", engine.tokenize_failure_hint))),
               evidence="read the engine log at the time of the request for its error")
        return
    expect(endpoint.name, "serving.tokenize", expected="POST /tokenize answers with token ids",
           observed=f"{fact.value} tokens", ok=fact.value > 0, hint="the engine's tokenizer counts no tokens",
           evidence=f"{fact.source}: {fact.quote}")
