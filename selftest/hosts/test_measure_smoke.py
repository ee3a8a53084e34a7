"""The measure command's budget (selftest/hosts/measure_smoke.py `--budget`, scripts/gpu/fleet_measure.sh): which
run it predicts would not fit. The runs here are written by hand (hosts and wall seconds only)."""

from __future__ import annotations

from selftest.hosts.measure_smoke import predicted_wall_s, summarize


def _runs(*pairs: tuple[int, float]) -> list[dict]:
    return [{"hosts": hosts, "wall_s": wall_s} for hosts, wall_s in pairs]


def test_nothing_measured_yet_predicts_nothing():
    assert predicted_wall_s([], 256) == 0.0


def test_a_host_count_already_measured_predicts_its_longest_wall():
    assert predicted_wall_s(_runs((256, 20.0), (256, 31.0), (64, 7.0)), 256) == 31.0


def test_a_smaller_fleet_predicts_the_next_larger_one_measured():
    assert predicted_wall_s(_runs((1, 5.0), (256, 20.0), (1024, 90.0)), 64) == 20.0


def test_a_larger_fleet_extends_the_line_through_the_two_largest():
    # 64 -> 256 hosts took 12 s more: 1024 hosts about 4 x 12 s more again
    assert predicted_wall_s(_runs((1, 5.0), (64, 8.0), (256, 20.0)), 1024) == 20.0 + 12.0 / 192 * 768


def test_one_host_count_measured_predicts_at_least_its_wall():
    assert predicted_wall_s(_runs((1, 5.0)), 256) == 5.0


def test_a_run_stopped_at_the_budget_counts_but_is_no_median():
    runs = [{"hosts": 1, "workers": "0", "tool_latency_s": 0.5, "wall_s": 4.0, "cpu_s": 1.5, "loadavg_before": 1.0,
             "rc": 0},
            {"hosts": 16, "workers": "4", "tool_latency_s": 0.5, "wall_s": 9.0, "cpu_s": 8.0, "loadavg_before": 1.0,
             "rc": 0},
            {"hosts": 16, "workers": "4", "tool_latency_s": 0.5, "wall_s": 6.0, "cpu_s": 3.0, "loadavg_before": 1.0,
             "rc": None, "timed_out": True}]
    row = next(r for r in summarize(runs) if r["hosts"] == 16)
    assert (row["n"], row["timed_out"], row["wall_s_median"], row["cpu_s_median"]) == (1, 1, 9.0, 8.0)
    assert row["wall_s_all"] == [9.0, 6.0] and row["rc"] == [0, None] and row["vs_one_host_one_process"] == 2.25
