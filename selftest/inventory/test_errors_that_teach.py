"""Issue 46.6: an inventory error teaches. A typo'd key names the key it meant ("did you mean
compute_capability?") and the line it is on; a speculative algorithm the declared engine never reports is refused
at load, naming the engine's set (which its adapter holds: `speculative_algorithms`)."""

from __future__ import annotations

import pytest

from llmval.core.errors import InventoryError
from llmval.engines import ADAPTERS
from llmval.inventory import Inventory, load_inventory
from llmval.inventory._where import line_of, meant_key, toml_lines
from selftest.strategies import ROOT

KPRO6 = (ROOT / "inventories" / "kpro6.toml").read_text()


def _refused(tmp_path, text: str) -> list[tuple[str, str]]:
    path = tmp_path / "inventory.toml"
    path.write_text(text)
    with pytest.raises(InventoryError) as refused:
        load_inventory(path)
    return refused.value.problems


def _typo(text: str, key: str, typo: str) -> tuple[str, int]:
    """`text` with the first `key =` line's key misspelt, and that line's number."""
    lines = text.splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if line.lstrip().startswith(f"{key} ="))
    lines[number - 1] = lines[number - 1].replace(key, typo, 1)
    return "\n".join(lines) + "\n", number


@pytest.mark.parametrize(("key", "typo"), [
    ("compute_capability", "compute_capabilty"), ("memory_total_mib_min", "memory_total_mb_min"),
    ("kv_cache_dtype", "kv_cache_dtyp"), ("tool_call_parser", "tool_call_parse"), ("base_url", "base_ur1"),
    ("goal", "gaol"),
])
def test_a_typo_names_the_key_it_meant_and_its_line(tmp_path, key, typo):
    text, number = _typo(KPRO6, key, typo)
    problems = _refused(tmp_path, text)  # a required key misspelt is missing, too
    [reason] = [reason for where, reason in problems if where.endswith(f".{typo}")]
    assert reason == f"unknown key: did you mean {key}? (line {number})", problems


def test_a_key_like_none_is_still_an_unknown_key_with_its_line(tmp_path):
    text = KPRO6.replace("[deployment]\n", "[deployment]\ncolour = \"red\"\n", 1)
    [(where, reason)] = _refused(tmp_path, text)
    number = text.splitlines().index('colour = "red"') + 1
    assert where == "deployment.colour" and reason.startswith("unknown key (check its spelling")
    assert reason.endswith(f"(line {number})")


def test_a_misspelt_array_of_tables_names_the_section_it_meant_and_its_line(tmp_path):
    # `[[endpoint]]` for `[[endpoints]]`: before, "endpoint: unknown key: did you mean endpoints?" had no line
    text = KPRO6.replace("[[endpoints]]\n", "[[endpoint]]\n", 1).replace("[endpoints.", "[endpoint.")
    number = text.splitlines().index("[[endpoint]]") + 1
    problems = dict(_refused(tmp_path, text))
    assert problems["endpoint"] == f"unknown key: did you mean endpoints? (line {number})", problems


def test_an_inline_tables_key_and_a_transports_tag_find_their_line():
    text = '[[hosts]]\nname = "a"\n\n[[hosts]]\nname = "b"\ntransport = { kind = "ssh", adress = "10.0.0.1" }\n'
    assert toml_lines(text)[("hosts", 1, "transport", "adress")] == 6
    assert line_of(text, ("hosts", 1, "transport", "ssh", "adress")) == 6  # pydantic's location holds the tag
    schema = Inventory.model_json_schema(by_alias=True)
    assert meant_key(schema, ("hosts", 1, "transport", "ssh", "adress")) == "address"
    assert meant_key(schema, ("hosts", 0, "gpus", "compute_capabilty")) == "compute_capability"
    assert meant_key(schema, ("deployment", "colour")) is None


@pytest.mark.parametrize(("engine", "algorithm", "said"), [
    ("sglang", "NEXTN", "sglang reports NEXTN as EAGLE: declare 'EAGLE'"),
    ("sglang", "eagle", "sglang has no speculative algorithm 'eagle'; did you mean 'EAGLE'? (sglang reports one of "
                        "['EAGLE', 'EAGLE3', 'NGRAM', 'STANDALONE'])"),
    ("sglang", "MEDUSA", "sglang has no speculative algorithm 'MEDUSA' (sglang reports one of "
                         "['EAGLE', 'EAGLE3', 'NGRAM', 'STANDALONE'])"),
    ("vllm", "EAGLE", "vllm has no speculative algorithm 'EAGLE'; did you mean 'eagle'?"),
], ids=["sglang-nextn", "sglang-lowercase", "sglang-medusa", "vllm-uppercase"])
def test_a_speculative_algorithm_the_engine_never_reports_is_refused_naming_its_set(tmp_path, engine, algorithm,
                                                                                     said):
    text = KPRO6.replace('engine = "sglang"', f'engine = "{engine}"').replace(
        'algorithm = "EAGLE"', f'algorithm = "{algorithm}"')
    [(where, reason)] = _refused(tmp_path, text)
    assert where == "endpoints[0:kpro6-sglang].expect.speculative.algorithm"
    number = next(n for n, line in enumerate(text.splitlines(), start=1)
                  if line.startswith(f'algorithm = "{algorithm}"'))
    assert reason.startswith(said) and reason.endswith(f"(line {number})"), reason


@pytest.mark.parametrize(("engine", "algorithm"), [
    ("sglang", "EAGLE"), ("sglang", "NGRAM"), ("vllm", "ngram"), ("vllm", "mtp"), ("vllm", "qwen3_5_mtp"),
    ("vllm", "eagle3"), ("openai", "anything"),
])
def test_what_the_engine_reports_is_taken(engine, algorithm):
    assert ADAPTERS[engine].speculative_algorithm_problem(algorithm) is None
