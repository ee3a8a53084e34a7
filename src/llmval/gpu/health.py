"""GPU health verdicts (`hosts.gpu.health.*`): what DCGM's health watches report, judged from read-only evidence.

Each `judge_*` takes the parsed health fields of a host's GPUs (`llmval.parsers.gpu_health`) and the
inventory's `[hosts.gpus.health]` and returns one `HealthVerdict` for the host: `ok` True or False, or None
when a GPU does not report the field (`[N/A]`, `Not Supported`: GB10 reports many so). "Not reported" is
never a pass and never a failure: the contract raises `NotReported` (could not check, with the reason)
unless the inventory lists the check under `not_reported`. A failure quotes the XML element and its value,
or the Xid line.

    >>> from llmval.parsers.gpu_health import GpuHealth
    >>> gpu = GpuHealth("0000:01:00.0", "NVIDIA H200", {"remapped_rows/remapped_row_pending": "Yes",
    ...                                                 "remapped_rows/remapped_row_failure": "No"})
    >>> v = judge_row_remap([gpu])
    >>> v.ok, v.observed
    (False, {'0000:01:00.0': ['remapped_rows/remapped_row_pending=Yes']})
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.errors import LlmvalError
from ..inventory import EccAcknowledgement
from ..parsers.gpu_health import XID_MEANINGS, GpuHealth, XidEvent, has_boot_banner, is_reported, parse_xid_lines
from ..parsers.nvidia_smi import normalize_bus_id

CHECKS = ("pcie_link", "ecc_uncorrectable", "row_remap", "xid", "throttle", "persistence_mode")
"""The checks, each `hosts.gpu.health.<name>`."""
DEFAULT_THROTTLE_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
"""Thermal and power slowdowns. `sw_power_cap` is left out by default: a loaded GPU at its power limit shows it."""
RESAMPLE_INTERVAL_S = 1.0
"""Time between the two clocks-event samples of `throttle` (the second is taken only when the first shows one)."""
IDLE_STATES_FROM = 2
"""P-states at and above P2 are below full clocks: the driver may train the PCIe link down there to save power."""

PCIE = "pci/pci_gpu_link_info"
CUR_GEN, MAX_GEN = f"{PCIE}/pcie_gen/current_link_gen", f"{PCIE}/pcie_gen/max_link_gen"
CUR_WIDTH, MAX_WIDTH = f"{PCIE}/link_widths/current_link_width", f"{PCIE}/link_widths/max_link_width"
REMAP_BAD = (("remapped_rows/remapped_row_pending", "Yes"), ("remapped_rows/remapped_row_failure", "Yes"),
             ("retired_pages/pending_retirement", "Yes"), ("retired_pages/pending_blacklist", "Yes"),
             ("ecc_errors/unrepairable_memory", "Yes"))
"""Row remapping (A100 and later) or page retirement (older GPUs) waiting for a GPU reset, or failed."""
REMAP_COUNTS = ("remapped_rows/remapped_row_unc", "remapped_rows/remapped_row_corr",
                "retired_pages/double_bit_retirement/retired_count")
"""Counts quoted with the row_remap verdict (evidence, not judged: a remapped row is a repair that worked)."""
REASON_PREFIX_RE = re.compile(r"^clocks_(?:event|throttle)_reasons/clocks_(?:event|throttle)_reason_")

HINTS = {
    "pcie_link": "a link below its maximum trained down: reseat the GPU or its riser, check the slot's BIOS "
                 "setting (the generation and width the card supports); `nvidia-smi -q -d PCI` shows current and "
                 "max",
    "ecc_uncorrectable": "uncorrectable ECC errors: drain the GPU, reset it (`nvidia-smi -r` when idle, with the "
                         "owner's OK) and run `dcgmi diag -r 3`; volatile counts clear on reset, aggregate ones stay: "
                         "an old aggregate count the owners have dealt with can be acknowledged under "
                         "gpus.health.ecc_acknowledged (gpu, counter, count, acknowledged_on, reason); a higher count "
                         "still fails",
    "row_remap": "a pending row remap (or page retirement) takes effect only after a GPU reset; a remap failure "
                 "means the GPU needs an RMA (`nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT`)",
    "xid": "Xid codes: " + ", ".join(f"{c} = {m}" for c, m in sorted(XID_MEANINGS.items()) if c in
                                     (13, 31, 38, 43, 48, 63, 64, 74, 79, 94, 95, 109, 119, 145, 149)) +
           "; a GSP timeout without an Xid line counts as 119 (the GPU's firmware stopped answering: a GPU reset)",
    "throttle": "clocks held down: check cooling (airflow, fans, inlet temperature) and the power supply; "
                "`nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`",
    "persistence_mode": "persistence mode keeps the driver loaded between jobs: `nvidia-smi -pm 1` or the "
                        "nvidia-persistenced service (a host change: the owner's call)",
}


class NotReported(LlmvalError):
    """The GPU does not report a health field ([N/A], Not Supported), or the kernel log cannot be read."""


@dataclass(frozen=True)
class HealthVerdict:
    """One health check of one host: ok True/False, or None when it is not reported (`reason` says why)."""

    check: str
    ok: bool | None
    expected: str
    observed: object
    evidence: list[str] = field(default_factory=list)
    reason: str = ""
    grant: str = ""
    """When not reported because a read was refused: how to grant it (the GPU does report the field)."""

    @property
    def check_id(self) -> str:
        return f"hosts.gpu.health.{self.check}"

    @property
    def unreported_fix(self) -> str:
        """What the owner does about a not-reported verdict: grant a refused read, or (a field this GPU never
        reports) list the check under `gpus.health.not_reported`; never the second for a refused read."""
        if self.grant:
            return (f"the read was refused, the problem is not the GPU: {self.grant} (listing '{self.check}' under "
                    "gpus.health.not_reported would hide it)")
        return f"where this GPU never reports it, list '{self.check}' under gpus.health.not_reported"

    @property
    def hint(self) -> str:
        return HINTS[self.check]


def _int(value: str | None) -> int | None:
    match = re.match(r"^\s*(\d+)", value or "")
    return int(match[1]) if match and is_reported(value) else None


def _combine(check: str, expected: str, per_gpu: dict[str, tuple[bool | None, list[str]]],
             ok_observed: str) -> HealthVerdict:
    """Host verdict from per-GPU (ok, quoted fields): any failure fails; else any unreported GPU is unreported."""
    if not per_gpu:
        return HealthVerdict(check, None, expected, "no GPU in nvidia-smi -q -x", reason="nvidia-smi lists no GPU")
    bad = {bus: quotes for bus, (ok, quotes) in per_gpu.items() if ok is False}
    unreported = {bus: quotes for bus, (ok, quotes) in per_gpu.items() if ok is None}
    order = sorted(per_gpu, key=lambda bus: (per_gpu[bus][0] is not False, bus))  # failing GPUs first
    evidence = [f"GPU {bus}: {'; '.join(per_gpu[bus][1])}" for bus in order]
    if bad:
        return HealthVerdict(check, False, expected, bad, evidence)
    if unreported:
        reason = "; ".join(f"GPU {bus} reports {', '.join(q)}" for bus, q in unreported.items())
        return HealthVerdict(check, None, expected, f"not reported: {reason}", evidence, reason=reason)
    return HealthVerdict(check, True, expected, ok_observed, evidence)


def _pstate(gpu: GpuHealth) -> int | None:
    match = re.fullmatch(r"P(\d+)", (gpu.get("performance_state") or "").strip())
    return int(match[1]) if match else None


def judge_pcie_link(gpus: list[GpuHealth], gen_min: int | None = None, width_min: int | None = None) -> HealthVerdict:
    """Current PCIe generation and width at the maximum the device and system allow (`max_link_gen/width`), or at
    the declared floor. At an idle P-state the driver may lower the generation to save power: there the link's
    capability (`max_link_gen`) is judged instead, and the evidence says so."""
    expected = (f"current link >= Gen{gen_min or 'max'} x{width_min or 'max'}" if gen_min or width_min
                else "current link generation and width = their maximum")
    per_gpu: dict[str, tuple[bool | None, list[str]]] = {}
    for gpu in gpus:
        cur_gen, max_gen, cur_w, max_w = (_int(gpu.get(p)) for p in (CUR_GEN, MAX_GEN, CUR_WIDTH, MAX_WIDTH))
        want_gen, want_w = gen_min or max_gen, width_min or max_w
        quotes = [gpu.quote(CUR_GEN), gpu.quote(CUR_WIDTH)]
        if cur_gen is None or cur_w is None or want_gen is None or want_w is None:
            missing = [gpu.quote(p) for p, v in ((CUR_GEN, cur_gen), (CUR_WIDTH, cur_w), (MAX_GEN, want_gen),
                                                (MAX_WIDTH, want_w)) if v is None]
            per_gpu[gpu.bus_id] = (None, missing)
            continue
        bad = [] if cur_w >= want_w else [f"{gpu.quote(CUR_WIDTH)} (want x{want_w})"]
        if cur_gen < want_gen:
            pstate = _pstate(gpu)
            if pstate is not None and pstate >= IDLE_STATES_FROM and max_gen is not None and max_gen >= want_gen:
                quotes.append(f"performance_state=P{pstate}: idle link power saving; {gpu.quote(MAX_GEN)} judged")
            else:
                bad.insert(0, f"{gpu.quote(CUR_GEN)} (want Gen{want_gen})")
        per_gpu[gpu.bus_id] = (False, bad) if bad else (True, quotes)
    links = sorted({f"Gen{_int(g.get(CUR_GEN))} x{_int(g.get(CUR_WIDTH))}" for g in gpus})
    return _combine("pcie_link", expected, per_gpu, f"every GPU at {' / '.join(links)}")


def _uncorrectable_paths(gpu: GpuHealth) -> list[str]:
    """Volatile and aggregate uncorrectable counters: `*uncorrectable*` leaves (driver 535+), else the older
    schema's `double_bit/total`."""
    paths = [p for p in gpu.fields if p.startswith(("ecc_errors/volatile/", "ecc_errors/aggregate/"))]
    new = [p for p in paths if "uncorrectable" in p.rsplit("/", 1)[-1]]
    return new or [p for p in paths if p.endswith("double_bit/total")]


AGGREGATE = "ecc_errors/aggregate/"


def _acknowledged(ack: EccAcknowledgement) -> str:
    return f"{ack.count} acknowledged on {ack.acknowledged_on}: {ack.reason}"


def _is_gpu(ack: EccAcknowledgement, gpu: GpuHealth) -> bool:
    if ack.gpu.upper().startswith(("GPU-", "MIG-")):
        return ack.gpu.lower() == gpu.uuid.lower()
    return normalize_bus_id(ack.gpu) == gpu.bus_id


def judge_ecc_uncorrectable(gpus: list[GpuHealth], acknowledged: tuple[EccAcknowledgement, ...] | list = ()
                            ) -> HealthVerdict:
    """Volatile and aggregate uncorrectable ECC counts all zero (where ECC is enabled and counted), but for the
    aggregate counts the inventory acknowledges: held at exactly the acknowledged reading; above it is a new event,
    below it (or on a GPU or counter nvidia-smi does not show) the acknowledgement is stale; both fail."""
    per_gpu: dict[str, tuple[bool | None, list[str]]] = {}
    held: list[str] = []
    used: set[int] = set()
    for gpu in gpus:
        acks = {a.counter: (i, a) for i, a in enumerate(acknowledged) if _is_gpu(a, gpu)}
        used |= {i for i, _ in acks.values()}
        mode = gpu.get("ecc_mode/current_ecc")
        if not is_reported(mode) or (mode or "").strip() != "Enabled":
            per_gpu[gpu.bus_id] = (None, [gpu.quote("ecc_mode/current_ecc")])
            continue
        paths = _uncorrectable_paths(gpu)
        counted = {p: _int(gpu.get(p)) for p in paths}
        if not any(v is not None for v in counted.values()):
            per_gpu[gpu.bus_id] = (None, [gpu.quote(p) for p in paths] or ["no uncorrectable ECC counters"])
            continue
        bad, known = [], []
        for path, value in counted.items():
            ack = acks.pop(path.removeprefix(AGGREGATE), (None, None))[1] if path.startswith(AGGREGATE) else None
            if ack is None:
                bad += [gpu.quote(path)] if value else []
            elif value == ack.count:
                known.append(f"{gpu.quote(path)} ({_acknowledged(ack)})")
            elif value is not None and value > ack.count:
                bad.append(f"{gpu.quote(path)}: a new event above the {_acknowledged(ack)}")
            else:
                bad.append(f"{gpu.quote(path)}: below the {_acknowledged(ack)}: the acknowledgement is stale "
                           "(another card, or its counters cleared) and would hide the next event; update or remove it")
        bad += [f"{AGGREGATE}{counter} acknowledged ({_acknowledged(ack)}) but this GPU has no such counter: the "
                "acknowledgement is stale; update or remove it" for counter, (_, ack) in acks.items()]
        held += [f"GPU {gpu.bus_id}: {k}" for k in known]
        per_gpu[gpu.bus_id] = (False, bad) if bad else (True, [f"{len(paths) - len(known)} counters 0", *known])
    for index, ack in enumerate(acknowledged):
        if index not in used:
            per_gpu[ack.gpu] = (False, [f"{AGGREGATE}{ack.counter} acknowledged ({_acknowledged(ack)}) but "
                                        "nvidia-smi shows no such GPU: the acknowledgement is stale; update or "
                                        "remove it"])
    expected = "volatile and aggregate uncorrectable ECC counts 0" + (
        f" (aggregate counts as acknowledged: {len(acknowledged)})" if acknowledged else "")
    ok_observed = "every uncorrectable counter 0" + (f" but the acknowledged: {'; '.join(held)}" if held else "")
    return _combine("ecc_uncorrectable", expected, per_gpu, ok_observed)


def judge_row_remap(gpus: list[GpuHealth]) -> HealthVerdict:
    """No pending row remap and no remap failure (row remapping, A100 and later); no pending page retirement
    (GPUs that retire pages); no unrepairable memory."""
    per_gpu: dict[str, tuple[bool | None, list[str]]] = {}
    for gpu in gpus:
        reported = [(p, bad) for p, bad in REMAP_BAD if is_reported(gpu.get(p))]
        if not reported:
            per_gpu[gpu.bus_id] = (None, [gpu.quote(p) for p, _ in REMAP_BAD[:3]])
            continue
        hits = [gpu.quote(p) for p, bad in reported if (gpu.get(p) or "").strip() == bad]
        counts = [gpu.quote(p) for p in REMAP_COUNTS if is_reported(gpu.get(p))]
        per_gpu[gpu.bus_id] = (False, hits + counts) if hits else (True, [gpu.quote(p) for p, _ in reported] + counts)
    return _combine("row_remap", "no pending row remap or page retirement, no remap failure", per_gpu,
                    "no pending remap, no remap failure")


def active_reasons(gpu: GpuHealth, reasons: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(active judged reasons, their element paths that are reported) of one sample of one GPU."""
    by_reason = {REASON_PREFIX_RE.sub("", p): p for p in gpu.fields if REASON_PREFIX_RE.match(p)}
    reported = [by_reason[r] for r in reasons if r in by_reason and is_reported(gpu.get(by_reason[r]))]
    active = [p for p in reported if (gpu.get(p) or "").strip() == "Active"]
    return active, reported


def needs_second_sample(gpus: list[GpuHealth], reasons: tuple[str, ...] = DEFAULT_THROTTLE_REASONS) -> bool:
    """True when a judged slowdown is active in the first sample: only then is a second sample taken."""
    return any(active_reasons(g, reasons)[0] for g in gpus)


def judge_throttle(first: list[GpuHealth], second: list[GpuHealth] | None,
                   reasons: tuple[str, ...] = DEFAULT_THROTTLE_REASONS, interval_s: float = 0.0) -> HealthVerdict:
    """No thermal or power slowdown active in two samples: a reason active in only one is momentary (no verdict
    against the host); one active in both fails. `second` is None when the first sample showed none active."""
    later = {g.bus_id: g for g in second or []}
    per_gpu: dict[str, tuple[bool | None, list[str]]] = {}
    for gpu in first:
        active, reported = active_reasons(gpu, reasons)
        if not reported:
            per_gpu[gpu.bus_id] = (None, [f"clocks event reasons {', '.join(reasons)} not reported"])
            continue
        temp = [gpu.quote("temperature/gpu_temp")] if is_reported(gpu.get("temperature/gpu_temp")) else []
        if not active:
            per_gpu[gpu.bus_id] = (True, [f"{len(reported)} slowdown reasons Not Active", *temp])
            continue
        again = later.get(gpu.bus_id)
        still = active_reasons(again, reasons)[0] if again is not None else []
        persistent = [p for p in active if p in still]
        if persistent:
            per_gpu[gpu.bus_id] = (False, [f"{gpu.quote(p)} in both samples {interval_s:.1f} s apart"
                                           for p in persistent] + temp)
        else:
            per_gpu[gpu.bus_id] = (True, [f"momentary: {gpu.quote(p)} in the first sample only" for p in active])
    return _combine("throttle", f"no {', '.join(reasons)} active in two samples", per_gpu, "no slowdown active")


def judge_persistence_mode(gpus: list[GpuHealth], want: str) -> HealthVerdict:
    """Persistence mode as the inventory asks (`enabled` / `disabled`)."""
    per_gpu: dict[str, tuple[bool | None, list[str]]] = {}
    for gpu in gpus:
        value = gpu.get("persistence_mode")
        if not is_reported(value):
            per_gpu[gpu.bus_id] = (None, [gpu.quote("persistence_mode")])
        else:
            per_gpu[gpu.bus_id] = ((value or "").strip().lower() == want, [gpu.quote("persistence_mode")])
    return _combine("persistence_mode", f"persistence_mode {want.capitalize()}", per_gpu,
                    f"every GPU {want.capitalize()}")


# ---- the kernel log ----------------------------------------------------------------------------------------

JOURNAL_DENIED = "not seeing messages from other users and the system"
NO_JOURNAL = "No journal files were found"
DMESG_PROBLEM_RE = re.compile(r"dmesg: .*(?:not permitted|denied|failed|not found)", re.IGNORECASE)
DMESG_REFUSED_RE = re.compile(r"not permitted|denied", re.IGNORECASE)
DMESG_GRANT = ("the kernel lets only privileged users read its log (sysctl kernel.dmesg_restrict=1): connect as root, "
               "or give the suite's user CAP_SYSLOG, or allow every user with `sysctl -w kernel.dmesg_restrict=0` "
               "(a host change: the owner's call), or read the journal instead (kernel_log = 'journal') as a member "
               "of the 'systemd-journal' or 'adm' group")
JOURNAL_GRANT = "connect as root, or add the suite's user to the 'systemd-journal' (or 'adm') group"


@dataclass(frozen=True)
class KernelLog:
    """Xid lines of the kernel log since boot, or why they cannot be read (`problem`)."""

    source: str
    xids: list[XidEvent]
    problem: str = ""
    grant: str = ""
    """When the read was refused: how to grant it."""


def read_journal(rc: int, stdout: str, stderr: str, command: str) -> KernelLog:
    """`journalctl -k -b -g 'NVRM: Xid|Linux version'`: Xid lines; a problem when the journal cannot show this
    boot's kernel messages (no journalctl, no journal, not allowed, or no boot banner: a container's journal)."""
    text = f"{stdout}\n{stderr}"
    if rc == 127 or "command not found" in stderr or ": not found" in stderr:
        return KernelLog(command, [], "no journalctl on this host")
    if NO_JOURNAL in text:
        return KernelLog(command, [], f"no journal on this host ({NO_JOURNAL}.)")
    if JOURNAL_DENIED in text:
        return KernelLog(command, [], "not allowed to read the system journal (journalctl: 'You are currently "
                                      "not seeing messages from other users and the system')", JOURNAL_GRANT)
    if rc not in (0, 1):
        return KernelLog(command, [], f"journalctl exit code {rc}: {stderr.strip()[-300:]}")
    xids = parse_xid_lines(stdout)
    if not xids and not has_boot_banner(stdout):
        return KernelLog(command, [], "the journal holds no kernel messages of this boot (no 'Linux version' "
                                      "line): a container's journal has none of its node's kernel log; declare "
                                      "`kernel_log_via` = the node")
    return KernelLog(command, xids)


def read_dmesg(rc: int, stdout: str, stderr: str, command: str) -> KernelLog:
    """`dmesg 2>&1 | grep -E 'NVRM: Xid|Linux version|dmesg: '`: Xid lines; a problem when dmesg is missing or
    not permitted, or when the ring buffer no longer reaches back to boot (its first lines were overwritten)."""
    text = f"{stdout}\n{stderr}"
    trouble = [line.strip() for line in text.splitlines() if DMESG_PROBLEM_RE.search(line)]
    if trouble:
        grant = DMESG_GRANT if DMESG_REFUSED_RE.search(trouble[0]) else ""
        return KernelLog(command, [], f"dmesg cannot read the kernel log: {trouble[0]}", grant)
    if rc not in (0, 1):
        return KernelLog(command, [], f"exit code {rc}: {stderr.strip()[-300:]}")
    xids = parse_xid_lines(stdout)
    if not xids and not has_boot_banner(stdout):
        return KernelLog(command, [], "the kernel ring buffer no longer reaches back to boot (no 'Linux version' "
                                      "line): older Xid lines may be lost; read the journal (kernel_log = 'journal')")
    return KernelLog(command, xids)


UNLISTED_XID = "not in this suite's table: see NVIDIA's Xid catalogue"


def judge_xid(logs: list[KernelLog], allowed: tuple[int, ...] = ()) -> HealthVerdict:
    """No Xid since boot (but the allowed codes), from the first log that could be read; not reported (with
    every source's problem) when none could."""
    expected = "no Xid in the kernel log since boot" + (f" (allowed: {list(allowed)})" if allowed else "")
    readable = next((log for log in logs if not log.problem), None)
    if readable is None:
        reason = "; ".join(f"`{log.source}`: {log.problem}" for log in logs) or "no kernel log source"
        grant = "; ".join(dict.fromkeys(log.grant for log in logs if log.grant))
        return HealthVerdict("xid", None, expected, f"not reported: {reason}", reason=reason, grant=grant)
    counted = [x for x in readable.xids if x.code not in allowed]
    evidence = [x.line for x in counted[:5]] + ([f"... {len(counted) - 5} more"] if len(counted) > 5 else [])
    if counted:
        codes = sorted({x.code for x in counted if x.xid_line})
        observed = {f"Xid {c}": f"{sum(x.code == c and x.xid_line for x in counted)}x: "
                                f"{XID_MEANINGS.get(c, UNLISTED_XID)}" for c in codes}
        if gsp := [x for x in counted if not x.xid_line and x.code == 119]:
            gpus = ", ".join(dict.fromkeys(x.device for x in gsp if x.device)) or "GPU not named"
            observed["GSP RPC/heartbeat timeout (no Xid line)"] = f"{len(gsp)}x: as Xid 119, {gpus}"
        if off_bus := [x for x in counted if not x.xid_line and x.code == 79]:
            gpus = ", ".join(dict.fromkeys(_lost_gpu_name(x) for x in off_bus))
            observed["GPU has fallen off the bus (no Xid line)"] = f"{len(off_bus)}x: as Xid 79, {gpus}"
        return HealthVerdict("xid", False, expected, observed, evidence)
    ignored = len(readable.xids) - len(counted)
    return HealthVerdict("xid", True, expected, "no Xid" + (f" ({ignored} allowed)" if ignored else ""),
                         [f"source: {readable.source}"])


def _lost_gpu_name(event: XidEvent) -> str:
    """`GPU 0000:b3:00.0 (PCI ID 10de:26b5)`, as the off-bus message named it (a tail whose head the log lost
    names none)."""
    if not event.device:
        return "a GPU the log does not name (its message's first line is missing)"
    return f"GPU {event.device.removeprefix('PCI:')}" + (f" (PCI ID {event.pci_id})" if event.pci_id else "")
