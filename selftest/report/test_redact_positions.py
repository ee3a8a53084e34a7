"""Redaction takes secrets, not the words around them (issue 21.5): "line 542" after a secret-named word stayed
"*** 542", which hid where an error was."""

from __future__ import annotations

import pytest

from llmval.core.contract import redact
from llmval.core.secrets import redact_tree


# bash's own error shape (`<script>: line N: <cmd>: command not found`), for a script whose name ends in a
# secret-named word; the other two in the shape of Python's json / tomllib position messages after such a word.
@pytest.mark.parametrize("text", [
    "/opt/llm/refresh-token: line 542: jq: command not found",
    "cannot read password: line 542 column 9 (char 18231)",
    "token: offset 4096 of the stream",
])
def test_a_position_after_a_secret_word_is_kept(text):
    assert redact(text) == text
    assert redact_tree({"evidence": [text]}) == {"evidence": [text]}


@pytest.mark.parametrize(("text", "kept"), [
    ("password=hunter22", "password=***"),
    ("api_key: sk-abcdefgh1234", "api_key: ***"),
    ("token: linenoise99", "token: ***"),  # a value that merely starts like a position word is still a secret
    ("secret: line542", "secret: ***"),
])
def test_secret_values_are_still_redacted(text, kept):
    assert redact(text) == kept


def test_a_word_that_only_ends_in_token_is_no_secret_name():
    """Issue 43.7: the zombie check's evidence quoted `sglang::detoken: allowed as ...` as `detoken: *** as`; a
    key name (`token:`, `HF_TOKEN=`, `x-api-key:`, camelCase `authToken:`) still has its value redacted."""
    from llmval.core.contract import redact

    evidence = "pid 971 sglang::detoken: allowed as `sglang::detokenizer` (its process title)"
    assert redact(evidence) == evidence
    for text in ("token: abcdefgh", "HF_TOKEN=abcdefgh12", "x-api-key: abcdefgh", "authToken: abcdefgh"):
        assert redact(text).endswith("***") and "abcdefgh" not in redact(text), text
