"""The engine runs with the flags the deployment's decisions depend on: attention backend, speculative
decoding, parallelism, model dtype."""

import pytest

pytestmark = [pytest.mark.serving, pytest.mark.smoke]

SPEC_HINTS = {
    "algorithm": "--speculative-algorithm (SGLang reports NEXTN as EAGLE)",
    "num_steps": "--speculative-num-steps",
    "eagle_topk": "--speculative-eagle-topk",
    "num_draft_tokens": "--speculative-num-draft-tokens (= steps + 1 when topk is 1)",
}

# Another model on the port (an old container back after a reboot) is one fault: the settings read are that other
# server's, so every setting check depends on the served model being the declared one.
SERVED = ("serving.model.id",)

# One wrong flag is one root cause: every setting follows the algorithm, and the draft-token count follows the steps
# and top-k (steps + 1 when topk is 1), so `--speculative-num-steps 5` is num_steps' fault, not also num_draft_tokens'.
SPEC_DEPENDS_ON = {
    "algorithm": ("serving.model.id",),
    "num_steps": ("serving.speculative.algorithm",),
    "eagle_topk": ("serving.speculative.algorithm",),
    "num_draft_tokens": ("serving.speculative.algorithm", "serving.speculative.num_steps",
                         "serving.speculative.eagle_topk"),
}


def test_attention_backend_matches(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.attention_backend, "expect.attention_backend")
    fact = engine.attention_backend()
    expect(endpoint.name, "serving.attention.backend", expected=expected, observed=fact.value,
           hint=f"start the engine with --attention-backend {expected}",
           evidence=f"{fact.source}: {fact.quote}", depends_on=SERVED)


@pytest.mark.parametrize("setting", list(SPEC_HINTS))
def test_speculative_setting_matches(endpoint, engine, expect, declared, setting):
    spec = declared(endpoint.expect.speculative, "expect.speculative")
    expected = declared(getattr(spec, setting), f"expect.speculative.{setting}")
    facts = engine.speculative()
    fact = facts.get(setting)
    observed = fact.value if fact else f"not reported (engine reports {sorted(facts)})"
    expect(endpoint.name, f"serving.speculative.{setting}", expected=expected, observed=observed,
           hint=SPEC_HINTS[setting], evidence=f"{fact.source}: {fact.quote}" if fact else "",
           depends_on=SPEC_DEPENDS_ON[setting])


def test_tensor_parallel_size_matches(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.tensor_parallel_size, "expect.tensor_parallel_size")
    fact = engine.tensor_parallel_size()
    expect(endpoint.name, "serving.parallel.tensor_parallel_size", expected=expected, observed=fact.value,
           hint="--tensor-parallel-size / --tp", evidence=f"{fact.source}: {fact.quote}", depends_on=SERVED)


def test_node_count_matches(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.nodes, "expect.nodes")
    fact = engine.nodes()
    expect(endpoint.name, "serving.parallel.nodes", expected=expected, observed=fact.value,
           hint="TP across nodes needs --distributed-executor-backend ray and every Ray node ALIVE "
                "(`ray list nodes`)", evidence=f"{fact.source}: {fact.quote}", depends_on=SERVED)


def test_executor_backend_matches(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.distributed_executor_backend, "expect.distributed_executor_backend")
    fact = engine.executor_backend()
    expect(endpoint.name, "serving.parallel.executor_backend", expected=expected, observed=fact.value,
           hint="--distributed-executor-backend ray (world size > local GPUs needs it explicitly)",
           evidence=f"{fact.source}: {fact.quote}", depends_on=SERVED)


def test_model_dtype_matches(endpoint, engine, expect, declared):
    expected = declared(endpoint.expect.dtype, "expect.dtype")
    fact = engine.model_dtype()
    expect(endpoint.name, "serving.model.dtype", expected=expected, observed=fact.value, hint="--dtype",
           evidence=f"{fact.source}: {fact.quote[:300]}", depends_on=SERVED)
