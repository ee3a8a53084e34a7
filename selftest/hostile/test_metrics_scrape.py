"""A `/metrics` scrape is parsed once, only the families the adapters read, series and lines capped (issue 45.3).

Before: a 60 MiB scrape of a million series took 48 s and 1.4 GB (`parse_metrics` built every Sample), and
`EngineAdapter.metrics` parsed each scrape whole for every fact read of it (`kv_cache_evidence`, `kv_fp8_quotes`).
Now each scrape is parsed once, and only the lines of the adapter's families, picked in one regular-expression
pass (`llmval.engines.metrics.kept_lines`), at most `MAX_SERIES` of them.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from llmval.core.errors import ParseError
from llmval.engines import ADAPTERS
from llmval.engines.metrics import MAX_LINE_CHARS, MAX_SERIES, parse_metrics
from selftest.hostile.server import HostileServer, answer
from selftest.strategies import ROOT

REAL_SCRAPE = ROOT / "selftest" / "data" / "engines" / "REAL-vllm-0.32.0-cpu-metrics.txt"
VLLM = ADAPTERS["vllm"]


def _junk_of(series: int) -> str:
    """`series` series of 50 families no adapter reads."""
    return "".join(f'vllm:junk_{i % 50}{{engine="{i}",model_name="smollm2",pod="{i:05d}"}} {i}.0\n'
                   for i in range(series))


def _million_series(extra: str = "") -> str:
    """About 60 MiB: a million series no adapter reads, the real scrape's lines among them."""
    junk = _junk_of(1_000_000)
    return junk[:len(junk) // 2] + REAL_SCRAPE.read_text() + extra + junk[len(junk) // 2:]


@pytest.mark.slow  # 4 s: building the scrape, and tracemalloc
def test_a_60_mib_scrape_of_a_million_series_reads_only_the_adapters_families_fast_and_small():
    text = _million_series()
    assert len(text) > 55 * 2**20
    tracemalloc.start()
    started = time.monotonic()
    metrics = parse_metrics(text, families=VLLM.metric_families())
    took = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{len(text) / 2**20:.0f} MiB, a million series: {took:.2f} s, {peak / 2**20:.1f} MiB allocated at peak")
    assert took < 5 and peak < 64 * 2**20, (took, peak)  # 48 s and 1.4 GB before
    assert not any(name.startswith("vllm:junk_") for name in metrics.names)
    assert metrics.labels("vllm:cache_config_info")  # what the adapter reads is all there


def test_what_the_adapter_reads_is_the_same_filtered_or_whole():
    """The real vLLM scrape: every family the adapter reads has the same samples whether the scrape is filtered to
    its families or parsed whole (so the filter drops nothing a check reads)."""
    text = REAL_SCRAPE.read_text()
    whole, kept = parse_metrics(text), parse_metrics(text, families=VLLM.metric_families())
    for family in VLLM.metric_families():
        assert whole.find(family) == kept.find(family), family
    assert kept.names < whole.names


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
def test_every_metric_name_an_adapter_declares_is_one_of_its_families(kind):
    """A family an adapter names (a module constant `vllm:...`) but does not list would be filtered out of every
    scrape and read as absent: each is in `metric_families()`."""
    import inspect

    adapter = ADAPTERS[kind]
    module = inspect.getmodule(adapter)
    named = {value for value in vars(module).values() if isinstance(value, str) and value.startswith(f"{kind}:")}
    assert named <= adapter.metric_families(), sorted(named - adapter.metric_families())


def test_a_million_series_of_a_family_read_is_refused_not_read_in_part():
    text = "# TYPE vllm:num_requests_running gauge\n" + "".join(
        f'vllm:num_requests_running{{engine="{i}"}} 1.0\n' for i in range(1_000_000))
    started = time.monotonic()
    with pytest.raises(ParseError, match=rf"cannot parse \[e\] /metrics: over {MAX_SERIES} series"):
        parse_metrics(text, "[e] /metrics", families=VLLM.metric_families())
    assert time.monotonic() - started < 2


def test_a_line_over_the_cap_of_a_family_read_is_refused():
    text = 'vllm:num_requests_running{engine="' + "x" * MAX_LINE_CHARS + '"} 1.0\n'
    with pytest.raises(ParseError, match=r"a line of \d+ characters, over the 65536"):
        parse_metrics(text, "[e] /metrics", families=VLLM.metric_families())


def test_an_unfiltered_scrape_over_the_lines_cap_is_refused():
    with pytest.raises(ParseError, match=r"over 30000 lines"):
        parse_metrics("x 1\n" * (3 * MAX_SERIES + 1), "[e] /metrics")


def test_the_adapter_keeps_only_its_families_of_a_scrape():
    """`EngineAdapter.metrics()` (every fact read of /metrics) parses only `metric_families()`."""
    from llmval.engines import adapter_for
    from llmval.inventory import EndpointSpec
    from llmval.io.http import endpoint_client

    with HostileServer({"/metrics": answer(_junk_of(20_000) + REAL_SCRAPE.read_text(),
                                           content_type="text/plain")}) as server:
        spec = EndpointSpec(name="hostile", platform="local", base_url=server.base_url, engine="vllm",
                            model="smollm2", request_timeout_s=5)
        metrics = adapter_for(spec, endpoint_client(spec)).metrics()
    assert metrics.names and {name.removesuffix("_total").removesuffix("_created") for name in metrics.names} <= \
        VLLM.metric_families(), sorted(metrics.names)
    assert metrics.labels("vllm:cache_config_info")
