"""[[perf]] sections: inconsistent gates are inventory errors naming the key; runs derive from the section."""

from __future__ import annotations

import pytest

from llmval.core.errors import InventoryError
from llmval.inventory import PerfSpec, parse_inventory

BASE = {"deployment": {"name": "d", "kind": "lab", "goal": "g"},
        "endpoints": [{"name": "e", "platform": "p", "base_url": "http://127.0.0.1:1", "engine": "vllm", "model": "m"}]}


@pytest.mark.parametrize(("perf", "expected"), [
    ({"endpoint": "e", "output_tok_s_min": 10}, "needs throughput_concurrency"),
    ({"endpoint": "e", "throughput_concurrency": 8, "ttft_concurrency": 4}, "neither 1 nor throughput_concurrency"),
    ({"endpoint": "nope"}, "'nope' is not an endpoint"),
    ({"endpoint": "e", "decode_tok_s_c1_mn": 5}, "unknown key"),
], ids=["throughput-without-c", "ttft-at-undeclared-c", "unknown-endpoint", "typo"])
def test_inconsistent_perf_section_is_an_inventory_error(perf, expected):
    with pytest.raises(InventoryError, match=expected):
        parse_inventory({**BASE, "perf": [perf]})


def test_runs_follow_the_section():
    spec = PerfSpec(endpoint="e", c1_requests=12, throughput_concurrency=8, requests_per_concurrency=5,
                    warmup_requests=2)
    assert spec.concurrencies == [1, 8]
    assert (spec.num_requests(1), spec.num_requests(8)) == (12, 40)
    assert (spec.warmups(1), spec.warmups(8)) == (2, 8)  # at least C warmup requests at concurrency C
