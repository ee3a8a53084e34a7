"""One room per engine: the registry matches the inventory's choices, the perf window and the serving check
share one acceptance computation, load counters and the perf server identity come from the adapter, and no
code outside `llmval.engines` (and the inventory models) compares engine names."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest

from llmval.engines import ADAPTERS, EngineAdapter, SglangAdapter, VllmAdapter, adapter_class, adapter_for
from llmval.engines.metrics import parse_metrics
from llmval.inventory import EndpointSpec
from llmval.load import EngineCounters, server_identity, window_deltas
from selftest.engines import fake_sglang
from selftest.strategies import ROOT

REAL_VLLM = ROOT / "selftest" / "data" / "engines" / "REAL-vllm-0.32.0-cpu-metrics.txt"
ENGINE_NAME_COMPARISON_RE = re.compile(
    r"""(==|!=|\bin\b|\bnot in\b)\s*[\[({]?\s*["'](vllm|sglang|openai|trtllm)["']"""
    r"""|["'](vllm|sglang|openai|trtllm)["']\s*(==|!=|\bin\b)""")


def test_the_inventory_init_and_cli_choices_are_the_registry():
    """One list of engine kinds (issue 22.4): the inventory's `engine =`, its JSON schema, `llmval init --engine`
    and the CLI's choices are all the registry's kinds."""
    from llmval.__main__ import main
    from llmval.cli.init import PLATFORMS
    from llmval.inventory import inventory_json_schema

    assert all(cls.kind == kind for kind, cls in ADAPTERS.items())
    schema = json.loads(inventory_json_schema())
    assert schema["$defs"]["EndpointSpec"]["properties"]["engine"]["enum"] == list(ADAPTERS)
    assert list(PLATFORMS) == list(ADAPTERS)
    assert all(PLATFORMS[k].base_url.endswith(f":{c.default_port}") for k, c in ADAPTERS.items())
    with pytest.raises(SystemExit):
        main(["init", "x", "--engine", "example-engine"])


def test_a_new_adapter_is_a_new_inventory_choice(monkeypatch):
    class ExampleAdapter(EngineAdapter):
        kind = "example-engine"

    monkeypatch.setitem(ADAPTERS, "example-engine", ExampleAdapter)
    spec = EndpointSpec.model_validate({"name": "t", "platform": "p", "base_url": "http://127.0.0.1:8000",
                                        "engine": "example-engine", "model": "m"})
    assert spec.engine == "example-engine"
    monkeypatch.delitem(ADAPTERS, "example-engine")
    with pytest.raises(ValueError, match=re.escape(f"unknown engine 'example-engine'; valid: {sorted(ADAPTERS)}")):
        EndpointSpec.model_validate({**spec.model_dump(mode="json"), "engine": "example-engine"})


def test_unknown_engine_names_the_valid_ones():
    assert {"openai", "sglang", "vllm"} <= set(ADAPTERS)
    with pytest.raises(ValueError, match=re.escape(f"unknown engine 'example-engine'; valid: {sorted(ADAPTERS)}")):
        adapter_class("example-engine")


def test_every_adapter_module_is_registered_without_a_list():
    """The registry is every EngineAdapter subclass of the package's modules, by kind, the plain server last
    (docs/adding-an-engine.md: one module, no list to edit)."""
    kinds = list(ADAPTERS)
    assert kinds[-1] == "openai" and kinds[:-1] == sorted(kinds[:-1])
    assert ADAPTERS["sglang"] is SglangAdapter and ADAPTERS["vllm"] is VllmAdapter


VLLM_BEFORE = ("vllm:spec_decode_num_drafts_total 100\nvllm:spec_decode_num_accepted_tokens_total 150\n"
               "vllm:spec_decode_num_draft_tokens_total 400\n")
VLLM_AFTER = ("vllm:spec_decode_num_drafts_total 300\nvllm:spec_decode_num_accepted_tokens_total 550\n"
              "vllm:spec_decode_num_draft_tokens_total 1200\n")
SGLANG_BEFORE = "sglang:generation_tokens_total 1000\nsglang:spec_verify_calls_total 400\n"
SGLANG_AFTER = "sglang:generation_tokens_total 1600\nsglang:spec_verify_calls_total 700\n"


@pytest.mark.parametrize(("engine", "before", "after", "length", "rate"), [
    (VllmAdapter, VLLM_BEFORE, VLLM_AFTER, 3.0, 0.5),
    (SglangAdapter, SGLANG_BEFORE, SGLANG_AFTER, 2.0, None),
])
def test_perf_window_and_serving_check_use_one_acceptance_computation(engine, before, after, length, rate):
    spec = EndpointSpec(name="ep", platform="p", base_url="http://engine.test:1", engine=engine.kind, model="m")
    adapter = adapter_for(spec, httpx.Client(base_url="http://engine.test:1",  # the ceiling asks /server_info
                                             transport=httpx.MockTransport(lambda r: httpx.Response(404))))
    fact = adapter.accept_length(parse_metrics(before), parse_metrics(after))
    window = window_deltas(EngineCounters.from_text(before, engine), EngineCounters.from_text(after, engine))
    assert fact.value == window.spec_acceptance_length == length
    assert window.spec_acceptance_rate == rate
    assert fact.source in window.spec_acceptance_note


def test_window_without_acceptance_counters_says_what_is_missing():
    window = window_deltas(EngineCounters.from_text("", VllmAdapter), EngineCounters.from_text("", VllmAdapter))
    assert window.spec_acceptance_length is None
    assert "vllm:spec_decode_num_drafts" in window.spec_acceptance_note


def test_load_counters_read_a_real_vllm_scrape_by_the_adapters_names():
    counters = EngineCounters.from_text(REAL_VLLM.read_text(), VllmAdapter)
    assert (counters.generation_tokens, counters.finished_requests, counters.running, counters.waiting) \
        == (4260.0, 110.0, 4.0, 0.0)
    assert counters.is_idle is False
    plain = EngineCounters.from_text(REAL_VLLM.read_text(), EngineAdapter)  # a plain OpenAI server: nothing countable
    assert plain.generation_tokens is None and plain.is_idle is None


def _identity(engine: type[EngineAdapter], handler) -> dict:
    async def go() -> dict:
        async with httpx.AsyncClient(base_url="http://engine.test:1", transport=httpx.MockTransport(handler)) as c:
            return await server_identity(c, endpoint="ep", engine=engine, base_url="http://engine.test:1")
    return asyncio.run(go())


def test_perf_identity_reads_each_engines_own_facts():
    sglang = _identity(SglangAdapter, fake_sglang.handler("healthy"))
    assert sglang["engine"] == "sglang" and sglang["server_info"]["tp_size"] == 4 and "cache" not in sglang

    def vllm(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/metrics":
            return httpx.Response(200, text=REAL_VLLM.read_text())
        return httpx.Response(404)

    identity = _identity(VllmAdapter, vllm)
    assert identity["cache"]["cache_dtype"] == "auto" and "server_info" not in identity


# Files whose string comparisons name something else than the engine of an endpoint, and why.
NOT_ENGINE_DISPATCH = {
    "src/llmval/bench/_engine_side_by_side.py": "labels the two *tools* measured side by side (`vllm bench serve` "
                                                "and this suite), not the engine of an endpoint",
    "src/llmval/bench/_side_by_side.py": "labels the two *tools* of `bench --side-by-side` (`vllm bench serve` and "
                                         "this suite), not the engine of an endpoint",
}


def test_no_engine_name_comparison_outside_the_adapters():
    offenders = []
    for folder in ("src/llmval", "fixtures", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith(("src/llmval/engines/", "src/llmval/inventory/")) or relative in NOT_ENGINE_DISPATCH:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if ENGINE_NAME_COMPARISON_RE.search(line):
                    offenders.append(f"{relative}:{number}: {line.strip()}")
    assert not offenders, "engine knowledge belongs in the adapter (llmval.engines):\n" + "\n".join(offenders)


@pytest.mark.parametrize(("declared", "named"), [({"host": "gpu1"}, "no `logs` for"), ({}, "no `logs` or `host` for"),
                                                 ({"host": "gpu1", "logs": "journal:sglang.service"},
                                                  "no `logs` this run can read for")])
def test_a_missing_engine_log_names_the_key_the_inventory_leaves_out(declared, named):
    """`llmval init`'s inventory declares the endpoint's `host` and leaves `logs` commented: its first could-not-check
    said "declares no `logs` (and `host`)", as if `host` were missing too."""
    from llmval.engines.base import NotExposed

    spec = EndpointSpec(name="e", platform="p", base_url="http://127.0.0.1:30000", engine="sglang", model="m",
                        **declared)
    adapter = adapter_for(spec, httpx.Client())
    for read in (lambda: adapter.log_text, adapter.last_log_errors):
        with pytest.raises(NotExposed, match=re.escape(f"[e] the inventory declares {named} this endpoint")):
            read()
