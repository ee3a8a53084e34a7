"""Three SYNTHESIZED nightly runs of one deployment, written into a reports folder as the suite writes them
(`llmval.report.results.write_document`: results.json and history/): GREEN, RED, GREEN. In the second run one
check breaks and holds again after (`FLAKY_CHECK`: a flaky check), the decode figure falls below its gate, and a
check no other run judged could not be made. What the Prometheus and trend self-tests share; no real run made them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from llmval.core.verdict import Cause, Measured, Verdict
from llmval.report.results import RunResults, TestResult, run_results, write_document

DEPLOYMENT = "trend-selftest"
FLAKY_CHECK = "serving.tool_calls.validity"
ENDPOINT = "lab-vllm"
HOST = "gpu-node-01"
STARTS = [dt.datetime(2026, 12, 1, 2, 17, tzinfo=dt.UTC) + dt.timedelta(days=n) for n in range(3)]
DECODE = [41.8, 36.2, 42.4]
"""tok/s at C=1, against a gate of at least 40: the second night below it."""
TTFT_P99 = [612.0, 655.5, 640.2]
"""ms at C=4, against a gate of at most 900: always within it."""


def verdict(target: str, check: str, held: bool, *, expected: str = "", observed: str = "",
            cause: Cause | None = None) -> Verdict:
    return Verdict(target=target, check=check, expected=expected, observed=observed,
                   cause=cause or (Cause.HELD if held else Cause.BROKEN))


def night(n: int, *, scope: str = "nightly", extra_target: str = ENDPOINT) -> RunResults:
    """The n-th synthesized run (0, 1, 2): the second breaks `FLAKY_CHECK` and the decode gate."""
    broken = n == 1
    tests = [
        TestResult(nodeid=f"tests/hosts/test_gpus.py::test_gpu_count_matches_inventory[{HOST}]", outcome="passed",
                   verdicts=[verdict(HOST, "hosts.gpu.count", True, expected="4", observed="4")]),
        TestResult(nodeid=f"tests/serving/test_tool_calls.py::test_tool_call_validity[{extra_target}]",
                   outcome="failed" if broken else "passed",
                   verdicts=[verdict(extra_target, FLAKY_CHECK, not broken, expected=">= 0.95",
                                     observed="0.81" if broken else "0.99")],
                   measured=[Measured(target=extra_target, name="toolcalls.validity", value=0.81 if broken else 0.99,
                                      unit="fraction")]),
        TestResult(nodeid=f"tests/perf/test_decode.py::test_decode_tok_s_c1_meets_minimum[{ENDPOINT}]",
                   outcome="failed" if broken else "passed",
                   verdicts=[verdict(ENDPOINT, "perf.decode.tok_s_c1", not broken, expected=">= 40 tok/s",
                                     observed=f"{DECODE[n]:.2f} tok/s")],
                   measured=[Measured(target=ENDPOINT, name="decode_tok_s_c1", value=DECODE[n], unit="tok/s")]),
        TestResult(nodeid=f"tests/perf/test_latency.py::test_ttft_p99_within_gate[{ENDPOINT}]", outcome="passed",
                   verdicts=[verdict(ENDPOINT, "perf.latency.ttft_p99_ms", True, expected="<= 900 ms at C=4",
                                     observed=f"{TTFT_P99[n]:.1f} ms at C=4")],
                   measured=[Measured(target=ENDPOINT, name="ttft_p99_ms_c4", value=TTFT_P99[n], unit="ms")]),
    ]
    if broken:  # and a check that could not be made, judged in no other run
        tests.append(TestResult(nodeid=f"tests/hosts/test_model_files.py::test_model_files_identical[{HOST}]",
                                outcome="error", verdicts=[verdict(HOST, "hosts.model_files.sha256", False,
                                                                   cause=Cause.COULD_NOT_CHECK)]))
    return run_results(inventory_path="inventory.toml", deployment=DEPLOYMENT, started=STARTS[n], duration_s=61.5,
                       mode="attach", markexpr="" if scope == "nightly" else scope, exitstatus=1 if broken else 0,
                       results=tests, scope=scope)


def write_nights(reports_dir: Path) -> list[Path]:
    """The three runs written into `reports_dir` as the suite writes them; their history files, oldest first."""
    for n in range(3):
        write_document(reports_dir, night(n), STARTS[n])
    return sorted((reports_dir / "history").glob("results-*.json"))
