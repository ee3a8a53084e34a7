"""The perf plugin, in a subprocess run of the real contract: xdist refused, replay skipped, gates fail loudly."""

from __future__ import annotations

import contextlib
import json
import tomllib

import pytest
import tomli_w

from llmval.report.exitcodes import ExitCode
from selftest.strategies import ROOT

from .perf_runs import run_perf
from .stub_perf_server import stub_perf_server

pytest_plugins = ["pytester"]
REPLAY = ROOT / "selftest" / "data" / "replays" / "SYNTHESIZED-kpro6-sglang-healthy"


# local.toml's gates that stay absolute numbers on the stub, whose numbers are not the local engine's
ABSOLUTE_ON_THE_STUB = ("output_tok_s_min", "ttft_p99_ms_max", "throughput_concurrency", "machine")


@contextlib.contextmanager
def stub_inventory(pytester: pytest.Pytester, *, drop: tuple[str, ...] = ABSOLUTE_ON_THE_STUB, lies: dict | None = None,
                   **gate_changes):
    """local.toml's local-vllm pointed at the stub perf server, its first perf section small (3 requests at C=1,
    in 16 / out 8) with `gate_changes` and without the `drop` keys: the inventory's path, the stub up meanwhile."""
    data = tomllib.loads((ROOT / "inventories" / "local.toml").read_text())
    endpoint = next(e for e in data["endpoints"] if e["name"] == "local-vllm")
    gate = data["perf"][0]
    gate.update(c1_requests=3, warmup_requests=1, output_len=8, input_len=16, **gate_changes)
    for key in drop:
        gate.pop(key, None)
    with stub_perf_server(endpoint["model"], **(lies or {})) as base_url:
        endpoint["base_url"] = base_url
        inventory = pytester.path / "stub.toml"
        inventory.write_text(tomli_w.dumps(data))
        yield inventory


def test_perf_under_xdist_is_a_usage_error_naming_the_fix(pytester):
    result = run_perf(pytester, "-n", "2", "--inventory", str(ROOT / "inventories" / "kpro6.toml"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "-p no:xdist" in result.stderr.str()


def test_perf_under_replay_skips_saying_timings_are_not_replayable(pytester):
    result = run_perf(pytester, "--replay", str(REPLAY), "--inventory", str(ROOT / "inventories" / "kpro6.toml"),
                      "-rs", "-p", "no:xdist")
    assert result.ret == 5  # nothing checked (llmval.report.exitcodes.ExitCode.NOTHING_CHECKED): every test skipped
    result.stdout.fnmatch_lines(["*SKIPPED*perf timings are not replayable*"])
    assert "passed" not in result.stdout.str().splitlines()[-1]


def test_perf_plugin_wires_the_session_to_a_stub_server(pytester):
    """Without the engine: the session measures each run once, says so on the terminal, and writes its JSON."""
    with stub_inventory(pytester, decode_tok_s_c1_min=1e6) as inventory:
        result = run_perf(pytester, "--inventory", str(inventory), "-p", "no:xdist", "-k", "decode or acceptance",
                          "--perf-baseline-dir", str(pytester.path / "baselines"),
                          "--perf-lock", str(pytester.path / "perf.lock"),
                          "--perf-allow-busy-host")  # a stub's numbers mean nothing: judge them on a busy box too
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the stub is far below the raised gate
    result.stdout.fnmatch_lines(["*perf local-vllm: measuring C=1 (in16-out8-c1-n3-*)*",
                                 "*perf local-vllm: C=1 decode * tok/s*", "*perf.decode.tok_s_c1*"])
    assert result.stdout.str().count("measuring C=1") == 1  # the C=1 run serves both tests, measured once
    report = json.loads((pytester.path / "reports" / "perf" / "local-vllm-c1.json").read_text())
    assert report["identity"]["engine"] == "vllm" and report["foreign_tokens"] == 0


def test_usage_x10_is_could_not_check_never_a_decode_rate(pytester):
    """Issue 42.2: a server whose usage claims 10x the tokens it streamed (C=1 decode 49.2 -> 555.3 tok/s, GREEN on a
    50 tok/s floor before). On a floor of 0.001 tok/s the lie would pass: the run is could not check instead."""
    with stub_inventory(pytester, decode_tok_s_c1_min=0.001, lies={"usage_factor": 10}) as inventory:
        result = run_perf(pytester, "--inventory", str(inventory), "-p", "no:xdist", "-k", "decode_tok_s_c1",
                          "--perf-baseline-dir", str(pytester.path / "baselines"),
                          "--perf-lock", str(pytester.path / "perf.lock"), "--perf-allow-busy-host")
    assert result.ret == 10, result.stdout.str()[-2000:]  # could not check (llmval.report.exitcodes)
    result.stdout.fnmatch_lines(["*UnverifiedTokenCount*3 of 3 streams*usage.completion_tokens 80 is above the "
                                 "request's max_tokens 8*"])
    assert " passed" not in result.stdout.str().splitlines()[-1]


def test_engine_metrics_of_every_perf_run_reach_results_json(pytester):
    """The stub's vLLM-named /metrics, sampled through both runs: measured values in results.json, samples in the
    run's JSON, the preemption gate judged on them."""
    # absolute gates ("machine" dropped): the metrics sampled are the stub's, not this machine's speed, and a
    # calibration on a loaded CI box falls below the scale floor (issue 43.7), which is test_calibrate's to judge
    with stub_inventory(pytester, drop=("output_tok_s_min", "ttft_p99_ms_max", "decode_tok_s_c1_min", "machine"),
                        throughput_concurrency=2, requests_per_concurrency=1, metrics_interval_s=0.05,
                        preemptions_max=0) as inventory:
        result = run_perf(pytester, "--inventory", str(inventory), "-p", "no:xdist", "-k", "engine_",
                          "--perf-baseline-dir", str(pytester.path / "baselines"),
                          "--perf-lock", str(pytester.path / "perf.lock"),
                          "--perf-allow-busy-host")  # a stub's numbers mean nothing: judge them on a busy box too
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    results = json.loads((pytester.path / "reports" / "results.json").read_text())
    measured = {m["name"]: m["value"] for t in results["tests"] for m in t["measured"]}
    assert measured["engine_kv_cache_usage_max_c1"] == 0.25 and measured["engine_preemptions_c2"] == 0
    checks = {v["check"]: v["cause"] for t in results["tests"] for v in t["verdicts"]}
    assert checks == {"perf.engine.sampled": "held", "perf.engine.preemptions": "held"}
    run = json.loads((pytester.path / "reports" / "perf" / "local-vllm-c2.json").read_text())
    assert run["engine_samples"]["summary"]["samples"] >= 2 and run["engine_samples"]["failed_scrapes"] == 0


@pytest.mark.engine
def test_gate_raised_above_capability_fails_with_measured_and_required_numbers(pytester, live_engine):
    data = tomllib.loads(live_engine.read_text())
    gate = data["perf"][0]
    gate.update(c1_requests=3, warmup_requests=1, output_len=16, decode_tok_s_c1_min=100000.0)
    inventory = pytester.path / "raised.toml"
    inventory.write_text(tomli_w.dumps(data))
    result = run_perf(pytester, "--inventory", str(inventory), "-p", "no:xdist", "-k", "decode_tok_s_c1",
                      "--perf-baseline-dir", str(pytester.path / "baselines"),
                      "--perf-lock", str(pytester.path / "held-by-parent.lock"),  # this session holds the real one
                      "--perf-allow-busy-host",  # the gate is out of reach on any host: judge it on a busy one too
                      timeout=900)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*local-vllm*perf.decode.tok_s_c1*",
                                 "*expected: >= * tok/s (100000 x * for this machine)*", "*observed: * tok/s*"])


def test_baseline_is_saved_then_compared_through_the_contract(pytester):
    """Two sessions against the stub: the first skips (no baseline) and saves one, the second judges
    perf.baseline.c1 against it, naming the baseline file; an absolute section stores no calibration."""
    args = ("-p", "no:xdist", "-k", "baseline and c1", "--perf-baseline-dir", str(pytester.path / "baselines"),
            "--perf-lock", str(pytester.path / "perf.lock"), "--perf-allow-busy-host")
    with stub_inventory(pytester, baseline_tolerance=0.9) as inventory:
        first = run_perf(pytester, "--inventory", str(inventory), "--perf-save-baseline", "-rs", *args)
        [saved] = (pytester.path / "baselines").rglob("*.json")
        second = run_perf(pytester, "--inventory", str(inventory), *args)
        results = json.loads((pytester.path / "reports" / "results.json").read_text())
        body = json.loads(saved.read_text())  # issue 42.7: a hand-edited baseline held any regression GREEN
        body["metrics"].update(decode_tok_s=-1000.0, output_throughput=-1000.0)
        saved.write_text(json.dumps(body))
        tampered = run_perf(pytester, "--inventory", str(inventory), *args)
    first.stdout.fnmatch_lines(["*perf baseline saved:*"])
    first.stdout.fnmatch_lines(["*SKIPPED*no baseline for server*--perf-save-baseline*"])
    assert "calibration" not in json.loads(saved.read_text())
    assert second.ret == pytest.ExitCode.OK, second.stdout.str()[-2000:]
    [verdict] = [v for t in results["tests"] for v in t["verdicts"] if v["check"] == "perf.baseline.c1"]
    assert verdict["cause"] == "held" and f"baseline {saved}" in verdict["evidence"]
    assert "'output_throughput': '>= " in verdict["expected"] and "- 90%)'" in verdict["expected"]  # as before
    assert tampered.ret == ExitCode.COULD_NOT_CHECK and "1 error" in tampered.stdout.str()
    tampered.stdout.fnmatch_lines([f"*cannot parse {saved}: refused as a baseline: decode_tok_s -1000.0 is not a "
                                   "finite number >= 0*"])
