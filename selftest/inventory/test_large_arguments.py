"""A tool-call argument size the served context cannot hold is refused when the inventory loads (issue 21.5),
never sent and then reported as an invalid (truncated) call.

The floor is measured, not guessed: the real SmolLM2 tokenizer reads the catalogue's large-string text at 1.98
bytes a token in the prompt and 1.41 JSON-escaped in the answer; the rule allows 4 (see
`llmval.inventory.serving.large_argument_fits`), so only sizes that certainly cannot fit are refused.
"""

from __future__ import annotations

from selftest.inventory.check import check_inventory
from selftest.strategies import ROOT

LOCAL = (ROOT / "inventories" / "local.toml").read_text()


def _local_with(tmp_path, sizes: str | None):
    """inventories/local.toml (max_model_len = 8192) with its large_argument_kib replaced (None: left out)."""
    assert "large_argument_kib = [1]\n" in LOCAL
    text = LOCAL.replace("large_argument_kib = [1]\n", "" if sizes is None else f"large_argument_kib = {sizes}\n")
    path = tmp_path / "inventory.toml"
    path.write_text(text)
    return path


def test_a_size_that_cannot_fit_is_refused_at_load_naming_the_key(tmp_path):
    path = _local_with(tmp_path, "[8, 32, 64]")
    code, output = check_inventory(path)
    assert code == 4, output
    assert "endpoints[0:local-vllm]: tool_calls.large_argument_kib: [32, 64] KiB cannot fit" in output, output
    assert "max_model_len = 8192" in output and "at most 16 KiB fits" in output, output


def test_sizes_that_fit_load_and_the_default_keeps_only_those(tmp_path):
    assert check_inventory(_local_with(tmp_path, "[1, 16]"))[0] == 0
    from llmval.inventory import load_inventory

    inventory = load_inventory(_local_with(tmp_path, None))
    assert inventory.endpoint("local-vllm").tool_calls.large_argument_kib == [8]  # of 8, 32, 64 at 8192
