"""/metrics parsing (prometheus_client's parser) on a REAL vLLM 0.32.0 scrape, and counter deltas."""

from __future__ import annotations

import pytest

from llmval.core.errors import ParseError
from llmval.engines import parse_metrics
from llmval.engines.metrics import delta
from selftest.strategies import ROOT

REAL = ROOT / "selftest" / "data" / "engines" / "REAL-vllm-0.32.0-cpu-metrics.txt"


def test_real_vllm_cache_config_info_labels():
    metrics = parse_metrics(REAL.read_text())
    (labels,) = metrics.labels("vllm:cache_config_info")
    assert labels["cache_dtype"] == "auto" and labels["engine"] == "0"
    assert metrics.total("vllm:generation_tokens") is not None
    assert not metrics.has("vllm:spec_decode_num_drafts")  # registered only with speculative decoding


def test_counter_delta_over_a_run():
    before = parse_metrics('vllm:spec_decode_num_drafts_total{engine="0"} 10\n')
    after = parse_metrics('vllm:spec_decode_num_drafts_total{engine="0"} 25\n')
    assert delta(before, after, "vllm:spec_decode_num_drafts") == 15
    assert delta(before, after, "vllm:absent") is None


def test_malformed_metrics_is_a_parse_error():
    with pytest.raises(ParseError, match="/metrics"):
        parse_metrics('vllm:x{a="1" 1\n')
