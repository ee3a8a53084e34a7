"""GPU health beyond presence (`hosts.gpu.health.*`), read-only, as DCGM's health watches report it: the PCIe
link, uncorrectable ECC, row remapping, Xid lines in the kernel log, thermal/power slowdown, persistence mode.

A field the GPU reports as [N/A] / Not Supported is "not reported": could not check (NotReported, with the
reason), never a pass or a failure, unless `gpus.health.not_reported` lists the check.
"""

import pytest

from llmval.gpu import health

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("gpus.health")]


def _spec(host, check):
    spec = host.gpus.health
    if check in spec.skip:
        pytest.skip(f"[{host.name}] gpus.health.skip lists {check}")
    return spec


def _state(expect, host, spec, verdict: health.HealthVerdict) -> None:
    __tracebackhide__ = True
    if verdict.ok is None:
        if verdict.check not in spec.not_reported:
            raise health.NotReported(f"[{host.name}] {verdict.check_id}: not reported: {verdict.reason}. Fix: "
                                     f"{verdict.unreported_fix}")
        expect(host.name, verdict.check_id, expected="not reported (gpus.health.not_reported)",
               observed=verdict.observed, ok=True, evidence="\n".join(verdict.evidence))
        return
    expect(host.name, verdict.check_id, expected=verdict.expected, observed=verdict.observed, ok=verdict.ok,
           hint=verdict.hint, evidence="\n".join(verdict.evidence))


@pytest.mark.check("hosts.gpu.health.pcie_link")
def test_gpu_pcie_link_at_its_maximum(host, facts, expect):
    spec = _spec(host, "pcie_link")
    _state(expect, host, spec, health.judge_pcie_link(facts.gpu_health(), spec.pcie_gen_min, spec.pcie_width_min))


@pytest.mark.check("hosts.gpu.health.ecc_uncorrectable")
def test_gpu_no_uncorrectable_ecc_errors(host, facts, expect):
    spec = _spec(host, "ecc_uncorrectable")
    _state(expect, host, spec, health.judge_ecc_uncorrectable(facts.gpu_health(), spec.ecc_acknowledged))


@pytest.mark.check("hosts.gpu.health.row_remap")
def test_gpu_no_pending_row_remap(host, facts, expect):
    spec = _spec(host, "row_remap")
    _state(expect, host, spec, health.judge_row_remap(facts.gpu_health()))


@pytest.mark.check("hosts.gpu.health.xid")
def test_gpu_no_xid_since_boot(host, facts_of, expect):
    spec = _spec(host, "xid")
    logs = facts_of(spec.kernel_log_via or host.name).kernel_log(spec.kernel_log)
    _state(expect, host, spec, health.judge_xid(logs, tuple(spec.xid_allowed)))


@pytest.mark.check("hosts.gpu.health.throttle")
def test_gpu_no_thermal_or_power_slowdown(host, facts, expect):
    spec = _spec(host, "throttle")
    reasons = tuple(spec.throttle_reasons)
    first = facts.gpu_health()
    second = facts.gpu_health_resample() if health.needs_second_sample(first, reasons) else None
    _state(expect, host, spec, health.judge_throttle(first, second, reasons, health.RESAMPLE_INTERVAL_S))


@pytest.mark.check("hosts.gpu.health.persistence_mode")
def test_gpu_persistence_mode_as_declared(host, facts, expect):
    spec = _spec(host, "persistence_mode")
    if spec.persistence_mode is None:
        pytest.skip(f"[{host.name}] gpus.health declares no persistence_mode")
    _state(expect, host, spec, health.judge_persistence_mode(facts.gpu_health(), spec.persistence_mode))
