"""Issue 43.7: the prefix-cache hint names the endpoint's own engine's flag (SGLang has no
`--no-enable-prefix-caching`: its prefix cache is the radix cache, off with `--disable-radix-cache`)."""

from __future__ import annotations

import ast

from llmval.engines import adapter_class
from selftest.strategies import ROOT


def test_each_engine_names_its_own_prefix_cache_flag():
    assert "--disable-radix-cache" in adapter_class("sglang").prefix_cache_hint
    assert "--no-enable-prefix-caching" not in adapter_class("sglang").prefix_cache_hint
    assert "--no-enable-prefix-caching" in adapter_class("vllm").prefix_cache_hint
    assert "--" not in adapter_class("openai").prefix_cache_hint  # a plain server: no flag to name


def test_the_agentic_prefix_cache_check_takes_its_hint_from_the_adapter():
    source = (ROOT / "tests" / "perf" / "test_agentic_load.py").read_text()
    assert "prefix_cache_hint" in source and "--no-enable-prefix-caching" not in source
    ast.parse(source)
