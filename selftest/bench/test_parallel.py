"""A load run split over worker processes is measured as one run (requests merged, one duration, the CPU of each)."""

from __future__ import annotations

import pytest

from llmval.bench import Schedule, source_process
from llmval.load import Workload, vllm_offsets
from llmval.load._parallel import _split, auto_workers, run_load_parallel


def test_concurrency_split_is_as_even_as_it_goes():
    assert _split(5, 2) == [3, 2] and _split(16, 2) == [8, 8] and sum(_split(7, 3)) == 7


def test_workers_follow_the_concurrency_and_leave_half_the_cores_to_the_engine():
    assert [auto_workers(c, cores=16) for c in (1, 16, 32, 33, 64, 256, 1024)] == [1, 1, 1, 2, 2, 8, 8]
    assert auto_workers(256, cores=2) == 1 and auto_workers(256, cores=1) == 1


@pytest.mark.subprocess
def test_two_workers_send_every_measured_request_once_and_merge_them():
    schedule = Schedule(ttft_s=0.0, interval_s=0.005, tokens_per_chunk=2, output_len=5)
    workload = Workload(model="m", input_len=4, output_len=5, concurrency=3, num_requests=5, warmup_requests=2)
    with source_process(schedule) as url:
        run, cpu = run_load_parallel(url, workload, workers=2, prompts=[f"p {i}" for i in range(7)], endpoint="cal",
                                     timeout_s=60)
    assert run.metrics.completed == 5 and run.metrics.failed == 0, run.errors
    assert run.metrics.total_output_tokens == 25  # from usage: 5 requests x 5 tokens, in 3 chunks each
    assert all(r.chunks == 3 for r in run.records)
    assert run.metrics.duration >= max(r.latency_s for r in run.records)
    assert len(cpu.workers) == 2 and cpu.total_s >= 0 and cpu.as_json()["workers"] == 2


@pytest.mark.subprocess
def test_an_open_loop_run_over_workers_sends_on_the_one_schedule():
    schedule = Schedule(ttft_s=0.0, interval_s=0.002, tokens_per_chunk=1, output_len=3)
    workload = Workload(model="m", input_len=4, output_len=3, concurrency=64, num_requests=40, warmup_requests=2,
                        request_rate=200.0)
    offsets = vllm_offsets(40, 200.0, "seed")
    with source_process(schedule) as url:
        run, _ = run_load_parallel(url, workload, workers=2, prompts=[f"p {i}" for i in range(42)], endpoint="cal",
                                   timeout_s=60, offsets=offsets)
    assert run.metrics.failed == 0, run.errors
    starts = sorted(r.scheduled_time for r in run.records)
    # one start for every worker: the scheduled times are start + the offsets, whichever worker sent them
    assert [round(s - starts[0], 6) for s in starts] == [round(o - offsets[0], 6) for o in sorted(offsets)]
    assert all(r.lag_s >= 0 for r in run.records)  # never sent before its time
    assert all(r.ttft_scheduled_s >= r.ttft_s for r in run.records)
