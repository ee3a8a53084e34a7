"""Gates relative to the machine (`llmval.load._calibrate`, `[perf.machine]`): the calibration runs pinned to the
engine's CPUs, the gates scale by min(1, score / reference) (rates and tok/s times, latencies divided), and the
perf session calibrates once, before any run, on a quiet host with an idle engine, or says why it could not."""

from __future__ import annotations

import json

import pytest

from llmval.load import Calibration, ClientHostBusy, Gates, MachineNotCalibrated, calibrate, scale_gates
from llmval.load._calibrate import SCALED_DOWN, SCALED_UP

from .fakes import FakeClock, FakeServer
from .sessions import RELATIVE, SPEC, ScriptedProbe, session


def test_gates_scale_with_the_machine_throughputs_and_rates_times_latencies_divided():
    half = scale_gates(RELATIVE, 0.5)
    assert half.decode_tok_s_c1_min == pytest.approx(SPEC.decode_tok_s_c1_min / 2)
    assert half.output_tok_s_min == pytest.approx(SPEC.output_tok_s_min / 2)
    assert half.ttft_p99_ms_max == pytest.approx(SPEC.ttft_p99_ms_max * 2)
    assert (half.goodput_ttft_ms, half.goodput_tpot_ms) == pytest.approx((SPEC.goodput_ttft_ms * 2,
                                                                          SPEC.goodput_tpot_ms * 2))
    assert half.request_rates == pytest.approx([r / 2 for r in SPEC.request_rates])
    assert (half.goodput_min, half.input_len, half.output_len, half.c1_requests) == \
        (SPEC.goodput_min, SPEC.input_len, SPEC.output_len, SPEC.c1_requests)  # shares and workload stay
    assert RELATIVE.decode_tok_s_c1_min == SPEC.decode_tok_s_c1_min  # the declared section is not changed


def test_a_scaled_bound_says_its_declared_value_and_factor():
    gates = Gates(declared=RELATIVE, spec=scale_gates(RELATIVE, 0.62), factor=0.62,
                  calibration=Calibration(12.4, (0,), 40, 3.0))
    assert gates.bound("decode_tok_s_c1_min", "tok/s") == f">= {SPEC.decode_tok_s_c1_min * 0.62:.3g} tok/s " \
                                                          f"({SPEC.decode_tok_s_c1_min:g} x 0.620 for this machine)"
    assert gates.bound("ttft_p99_ms_max", "ms", 4).endswith(f"({SPEC.ttft_p99_ms_max:g} / 0.620 for this machine)")
    assert "calibration 12.40 steps/s on CPUs 0, 20 where they were set" in gates.basis
    absolute = Gates(declared=SPEC, spec=SPEC)
    assert absolute.bound("decode_tok_s_c1_min", "tok/s") == f">= {SPEC.decode_tok_s_c1_min:g} tok/s"
    assert absolute.basis == "absolute gates (the inventory's numbers)"


@pytest.mark.subprocess
def test_calibration_runs_pinned_to_the_cpus_it_is_given():
    """REAL: the decode-shaped GEMV loop in a child pinned to CPU 0 (one BLAS thread)."""
    result = calibrate({0}, seconds=0.3)
    assert result.cpus == (0,) and result.steps >= 5 and result.steps_s > 0


def test_the_session_calibrates_once_before_any_run_and_scales_the_gates(tmp_path):
    order: list[str] = []

    def calibrator(cpus):
        order.append(f"calibrate {sorted(cpus)}")
        return Calibration(10.0, tuple(sorted(cpus)), 30, 3.0)  # half the reference's 20

    server = FakeServer(FakeClock())
    perf, said = session(tmp_path, server, ScriptedProbe([0.05], engine_cores=0.02),
                          calibrator=calibrator)
    perf.get(RELATIVE, 1)
    order.append(f"measured {len(server.completions)}")
    gates = perf.gates(RELATIVE)
    assert order == ["calibrate [0, 1]", f"measured {RELATIVE.warmups(1) + RELATIVE.num_requests(1)}"]
    assert gates.factor == 0.5 and gates.spec.decode_tok_s_c1_min == pytest.approx(SPEC.decode_tok_s_c1_min / 2)
    written = json.loads((tmp_path / "reports" / "perf" / "local-vllm-gates.json").read_text())
    assert written["factor"] == 0.5 and written["calibration"]["steps_s"] == 10.0
    assert written["in_force"]["request_rates"] == pytest.approx([r / 2 for r in SPEC.request_rates])
    assert any("gates relative to this machine" in line for line in said)


def test_a_faster_machine_never_gets_stricter_gates(tmp_path):
    perf, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([0.0], engine_cores=0.02),
                      calibrator=lambda cpus: Calibration(80.0, (0, 1), 90, 3.0))
    assert perf.gates(RELATIVE).factor == 1.0 and perf.gates(RELATIVE).spec.decode_tok_s_c1_min == \
        SPEC.decode_tok_s_c1_min


def test_absolute_gates_are_not_calibrated(tmp_path):
    perf, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([0.0]), calibrator=None)
    gates = perf.gates(SPEC)  # calibrator=None would fail if called
    assert gates.spec is SPEC and gates.factor == 1.0 and not gates.is_relative


def test_a_busy_calibration_is_made_again_then_could_not_check(tmp_path):
    calls: list[set[int]] = []

    def calibrator(cpus):
        calls.append(cpus)
        return Calibration(3.0, (0, 1), 5, 3.0)

    perf, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([1.3], engine_cores=0.02),
                      calibrator=calibrator)
    with pytest.raises(ClientHostBusy, match=r"during \[local-vllm\] the machine calibration in each of 2 attempts"):
        perf.get(RELATIVE, 1)
    assert len(calls) == 2
    with pytest.raises(ClientHostBusy):
        perf.gates(RELATIVE)
    assert len(calls) == 2  # not calibrated a third time


def test_an_engine_serving_someone_during_the_calibration_is_a_busy_calibration(tmp_path):
    probe = ScriptedProbe([0.0], engine_cores=1.8)
    perf, said = session(tmp_path, FakeServer(FakeClock()), probe,
                         calibrator=lambda cpus: Calibration(20.0, (0, 1), 5, 3.0))
    with pytest.raises(ClientHostBusy):
        perf.gates(RELATIVE)  # the scripted windows' engine used 1.8 cores
    assert any("the engine itself used 1.80 cores during the calibration" in line for line in said)


def test_relative_gates_for_an_engine_on_another_host_could_not_be_checked(tmp_path):
    perf, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([0.0], engine_cpus=set()),
                      calibrator=lambda cpus: Calibration(20.0, (0,), 5, 3.0))
    with pytest.raises(MachineNotCalibrated, match="its engine is not seen here \\(on another host\\)"):
        perf.get(RELATIVE, 1)


def test_a_calibration_below_the_scale_floor_is_could_not_check_not_a_gate_anyone_passes(tmp_path):
    """Issue 43.7: a busy host judged with --perf-allow-busy-host calibrated at 0.041 of the reference, and a 20 tok/s
    decode gate became 0.81 tok/s."""
    perf, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([1.4], engine_cores=0.02),
                      calibrator=lambda cpus: Calibration(0.82, (0, 1), 3, 3.0), judge_host_load=False)
    with pytest.raises(MachineNotCalibrated, match=r"on a busy host \(other processes .* at 0\.041 of the reference "
                                                   r".* below the floor 0\.2"):
        perf.gates(RELATIVE)


def test_a_quiet_slow_machine_is_scaled_to_its_own_speed_below_the_floor(tmp_path):
    """The floor is for contention: a calibration on a quiet host is the machine's speed (a 2-core box at 0.08 of a
    faster reference), and the gates scaled to it are that machine's."""
    perf, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([0.0], engine_cores=0.02),
                      calibrator=lambda cpus: Calibration(0.82, (0, 1), 3, 3.0), judge_host_load=False)
    gates = perf.gates(RELATIVE)
    assert gates.factor == pytest.approx(0.041) and gates.spec.decode_tok_s_c1_min == pytest.approx(
        RELATIVE.decode_tok_s_c1_min * 0.041)


def test_a_section_with_no_scaled_gate_is_judged_below_the_scale_floor_too(tmp_path):
    """The floor guards the speeds and latencies a factor scales; counts and shares (preemptions) mean the same on
    any machine, so a section declaring only those keeps its checks on a busy host (CI's perf-plugin self-test)."""
    counts_only = RELATIVE.model_copy(update={name: None for name in (*SCALED_UP, *SCALED_DOWN)}
                                      | {"preemptions_max": 0})
    perf, _ = session(tmp_path, FakeServer(FakeClock()), ScriptedProbe([1.4], engine_cores=0.02),
                      calibrator=lambda cpus: Calibration(0.82, (0, 1), 3, 3.0), judge_host_load=False)
    gates = perf.gates(counts_only)
    assert gates.factor < 0.2 and gates.spec.preemptions_max == 0
