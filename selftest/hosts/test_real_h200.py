"""The host contract on REAL captures of an H200 x2 machine (selftest/data/replays/hosts/REAL-h200x2)."""

from __future__ import annotations

from ._contract import INVENTORIES, REPLAYS, not_passed, run_hosts

pytest_plugins = ["pytester"]


def test_real_h200_passes_but_for_the_real_stray_holder(pytester):
    result, outcomes = run_hosts(pytester, "--inventory", str(INVENTORIES / "h200x2.toml"),
                                 "--replay", str(REPLAYS / "REAL-h200x2"))
    failed = not_passed(outcomes)
    assert list(failed) == ["test_no_stray_gpu_processes[h200]"], result.stdout.str()[-3000:]
    assert "[h200] hosts.gpu.stray_processes" in failed["test_no_stray_gpu_processes[h200]"]
    assert "713 python3" in failed["test_no_stray_gpu_processes[h200]"]
    passed = {n.split("::")[1] for n, (o, _) in outcomes.items() if o == "passed"}
    assert {"test_gpu_count_matches_inventory[h200]", "test_compute_capability_matches_inventory[h200]",
            "test_driver_at_least_minimum[h200]", "test_cuda_version_matches_inventory[h200]"} <= passed


def test_wrong_inventory_fails_count_name_and_compute_cap(pytester):
    result, outcomes = run_hosts(pytester, "--inventory", str(INVENTORIES / "h200x2-wrong.toml"),
                                 "--replay", str(REPLAYS / "REAL-h200x2"))
    failed = not_passed(outcomes)
    assert set(failed) == {"test_gpu_count_matches_inventory[h200]", "test_gpu_names_match_inventory[h200]",
                           "test_compute_capability_matches_inventory[h200]"}, result.stdout.str()[-3000:]
    cap = failed["test_compute_capability_matches_inventory[h200]"]
    assert "[h200] hosts.gpu.compute_cap" in cap and "expected: every GPU: 12.0" in cap and "'9.0'" in cap
    count = failed["test_gpu_count_matches_inventory[h200]"]
    assert "expected: 4" in count and "observed: 2" in count and "NVIDIA H200" in count


def test_live_recording_of_the_contract_on_the_h200_replays_green(pytester):
    """`REAL-h200x2-live` is what `--record` wrote while the contract ran ON a lent H200 x2 machine (idle)."""
    result, outcomes = run_hosts(pytester, "--inventory", str(INVENTORIES / "h200x2.toml"),
                                 "--replay", str(REPLAYS / "REAL-h200x2-live"))
    assert not_passed(outcomes) == {}, result.stdout.str()[-3000:]
    passed = {n.split("::")[1] for n, (o, _) in outcomes.items() if o == "passed"}
    assert len(passed) == 17
    health = ("pcie_link_at_its_maximum", "no_uncorrectable_ecc_errors", "no_pending_row_remap", "no_xid_since_boot",
              "no_thermal_or_power_slowdown", "persistence_mode_as_declared")
    assert {f"test_gpu_{name}[h200]" for name in health} <= passed
