"""A tool-call argument size the served context cannot hold is refused when the inventory loads (issues 21.5 and
31.7), never sent and then reported as the deployment's `http_error` or an invalid (truncated) call.

The rule uses the measured density, not a best case: the real SmolLM2 tokenizer reads the catalogue's large-string
text at 1.98 bytes a token in the prompt and 1.41 JSON-escaped in the answer (the rule counts 1.9 and 1.4, see
`llmval.inventory.serving.large_argument_fits`), and the sweep gives the answer half the context
(`tool_call_max_tokens_cap`). Before issue 31.7 it assumed 4 bytes a token, so `[1, 8]` at 8192 loaded and the 8 KiB
case (max_tokens 4096 + a 4097-token prompt) was refused by vLLM and counted against the deployment.
"""

from __future__ import annotations

from llmval.inventory.serving import large_argument_fits, tool_call_max_tokens_cap
from llmval.toolcalls import build_catalogue
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


def test_the_issue_s_8_kib_at_8192_is_refused_at_load_naming_the_largest_size_that_fits(tmp_path):
    code, output = check_inventory(_local_with(tmp_path, "[1, 8]"))
    assert code == 4, output
    assert "endpoints[0:local-vllm]: tool_calls.large_argument_kib: [8] KiB cannot fit" in output, output
    assert "max_model_len = 8192" in output and "at most 5 KiB fits" in output, output
    assert "max_tokens = 4096, half the context" in output, output


def test_a_size_that_cannot_fit_is_refused_at_load_naming_the_key(tmp_path):
    code, output = check_inventory(_local_with(tmp_path, "[8, 32, 64]"))
    assert code == 4, output
    assert "tool_calls.large_argument_kib: [8, 32, 64] KiB cannot fit" in output, output


def test_sizes_that_fit_load_and_the_default_keeps_only_those(tmp_path):
    assert check_inventory(_local_with(tmp_path, "[1, 5]"))[0] == 0
    from llmval.inventory import load_inventory

    inventory = load_inventory(_local_with(tmp_path, None))
    assert inventory.endpoint("local-vllm").tool_calls.large_argument_kib == []  # none of 8, 32, 64 fits 8192
    assert load_inventory(ROOT / "inventories" / "kpro6.toml").endpoints[0].tool_calls.large_argument_kib == [8, 32, 64]


def test_what_fits_is_what_the_sweep_sends_with_the_measured_density():
    """The request the sweep builds for the largest fitting size at 8192: the value at SmolLM2's measured 1.98
    bytes a prompt token plus the envelope, and max_tokens (capped at half the context), stay within 8192; one
    KiB more would need more answer tokens than the cap at the measured 1.41 bytes a token."""
    cap = tool_call_max_tokens_cap(8192)
    [case] = build_catalogue(categories=("large_string",), large_kib=[5], max_tokens_cap=cap)
    prompt_tokens = len(case.prompt.encode()) / 1.98 + 300  # the chat template and the tool's schema
    assert prompt_tokens + case.max_tokens <= 8192, (prompt_tokens, case.max_tokens)
    assert case.max_tokens >= 5 * 1024 / 1.41 + 30 and not cap >= 6 * 1024 / 1.41 + 30
    assert large_argument_fits(5, 8192) and not large_argument_fits(6, 8192)
