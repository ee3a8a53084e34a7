"""A load run split over worker processes is measured as one run (requests merged, one duration)."""

from __future__ import annotations

from llmval.bench import Schedule, source_process
from llmval.load import Workload
from llmval.load._parallel import _split, run_load_parallel


def test_concurrency_split_is_as_even_as_it_goes():
    assert _split(5, 2) == [3, 2] and _split(16, 2) == [8, 8] and sum(_split(7, 3)) == 7


def test_two_workers_send_every_measured_request_once_and_merge_them():
    schedule = Schedule(ttft_s=0.0, interval_s=0.005, tokens_per_chunk=2, output_len=5)
    workload = Workload(model="m", input_len=4, output_len=5, concurrency=3, num_requests=5, warmup_requests=2)
    with source_process(schedule) as url:
        run = run_load_parallel(url, workload, workers=2, prompts=[f"p {i}" for i in range(7)], endpoint="cal",
                                timeout_s=60)
    assert run.metrics.completed == 5 and run.metrics.failed == 0, run.errors
    assert run.metrics.total_output_tokens == 25  # from usage: 5 requests x 5 tokens, in 3 chunks each
    assert all(r.chunks == 3 for r in run.records)
    assert run.metrics.duration >= max(r.latency_s for r in run.records)
