"""`bench --pacing` says of its own rows, as the perf gates do (`ClientHostBusy`), when the client host was busy:
each row carries the load probe's window, and a busy one leaves the row not judged, saying why."""

from __future__ import annotations

from llmval.bench._pacing import _lag_row, verdict_words, with_client_host
from llmval.load import HostWindow


def _window(other_cores: float, wall_s: float = 3.0) -> HostWindow:
    return HostWindow(cpus=2, wall_s=wall_s, load_avg=(4.2, 3.9, 3.5), pressure_some_avg10=None, steal_share=0.0,
                      suite_cores=0.9, engine_cores=0.3, other_cores=other_cores, engine_pids=(4242,),
                      engine_note="on this host: pid 4242 listens on port 8000")


def _suite_row(lag_s: float) -> dict:
    row = _lag_row(1000.0, [lag_s] * 100, last_send_s=0.1, n=100)
    row["held"] = row["lag_p99_ms"] <= 1.0
    return row


def test_a_row_on_a_busy_client_host_is_not_judged_and_says_why():
    row = with_client_host(_suite_row(0.103), _window(other_cores=1.4))
    assert row["held"] is None  # a miss measured on a starved host is not the generator's miss
    assert row["client_host_busy"].startswith("other processes kept 1.40 of 2 CPUs busy")
    assert row["client_host"]["busy"] == row["client_host_busy"] and row["client_host"]["other_cores"] == 1.4
    words = verdict_words(row)
    assert words.startswith("not judged, client host busy: other processes kept 1.40 of 2 CPUs busy")
    assert "load 4.20" in words and "this process tree 0.90 cores" in words


def test_a_row_on_a_quiet_host_keeps_its_verdict_and_its_window():
    for lag_s, words in ((0.0002, "ok"), (0.103, "MISSES")):
        row = with_client_host(_suite_row(lag_s), _window(other_cores=0.2))
        assert row["client_host_busy"] is None and row["client_host"]["other_cores"] == 0.2
        assert verdict_words(row) == words


def test_a_window_too_short_to_judge_is_recorded_not_judged_busy():
    row = with_client_host(_suite_row(0.0002), _window(other_cores=1.9, wall_s=0.5))
    assert row["held"] is True and row["client_host_busy"] is None and row["client_host"]["wall_s"] == 0.5


def test_vllms_rows_are_marked_busy_without_a_verdict_of_their_own():
    row = _lag_row(1000.0, [0.037] * 100, last_send_s=0.1, n=100)  # vLLM's rows are not judged against the goal
    assert verdict_words(with_client_host(dict(row), _window(other_cores=0.1))) == ""
    busy = with_client_host(dict(row), _window(other_cores=1.4))
    assert "held" not in busy and verdict_words(busy).startswith("client host busy: other processes kept 1.40")
