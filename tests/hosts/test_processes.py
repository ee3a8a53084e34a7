"""Nothing but the serving processes holds /dev/nvidia*, and no serving process outlives its server (the seeds'
zombie workers: `kill -9` of the API server leaves `VLLM::EngineCore` holding the GPU memory)."""

import pytest

from llmval.core.errors import ReplayMiss
from llmval.engines import ADAPTERS
from llmval.gpu.holders import endpoint_ports, read_judgement

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("gpu_processes")]

ZOMBIE_CHECK = "hosts.gpu.zombie_workers"
ZOMBIE_HINT = ("the server is gone but its workers still hold the GPU memory: stop them (`kill <pid>`, then "
               "`fuser -v /dev/nvidia*` lists nothing) before the next start; the suite never kills anything")


STRAY_SERVER_HINT = ("a second server holds GPU memory on a port no endpoint declares: stop it (`kill <pid>` of its "
                     "server process) or declare it as an endpoint; the suite never kills anything")


def _judgement(host, facts, settings):
    source = host.env.source if host.env else None
    try:
        return read_judgement(facts, host.gpu_processes, endpoint_ports(settings.inventory, host.name),
                              sorted({engine.default_port for engine in ADAPTERS.values()}),
                              host.ray.run_in if host.ray else None,
                              source.value if source is not None and source.kind == "process" else None)
    except ReplayMiss:
        return None


def test_no_stray_gpu_processes(host, facts, expect, settings):
    rule = host.gpu_processes
    up = rule.stack == "up"
    judged = _judgement(host, facts, settings) if up else None
    if judged is not None and judged[0].partial:
        judged = None  # no parent chains recorded: names only here; hosts.gpu.zombie_workers judges what it can
    if judged is None:  # stack down, or a recording made before the process reads: fuser and names only
        from llmval.hostfacts import holder_is_allowed
        holders = [(h, holder_is_allowed(h, facts, rule.allowed, rule.allowed_units) if up else None)
                   for h in facts.gpu_holders()]
        stray = [f"{h.pid} {h.command}" for h, allowed in holders if allowed is None]
        evidence, own = "; ".join(f"pid {h.pid} {h.command}: {allowed}" for h, allowed in holders if allowed), False
    else:
        judgement, holders, _ = judged
        stray = [f"{h.pid} {h.name}" for h in judgement.strays] + judgement.server_text()
        zombies = [f"{h.pid} {h.name} (a zombie worker: see {ZOMBIE_CHECK})" for h, _ in judgement.zombies]
        own = bool(stray)
        stray += zombies
        evidence = "; ".join(f"pid {h.pid} {h.comm}: {h.why_allowed()}" for h in holders if h.is_serving)
    expected = "nothing (stack declared down)" if not up else \
        f"only {sorted(rule.allowed)} or processes of {sorted(rule.allowed_units)}"
    # only zombies: the zombie check is the cause and this one follows from it; a stray of its own is a cause itself
    expect(host.name, "hosts.gpu.stray_processes", expected=expected, observed=stray or "none", ok=not stray,
           hint=STRAY_SERVER_HINT if judged is not None and judgement.servers else
           rule.cleanup_hint or "`fuser -v /dev/nvidia*`; stop or kill the leftover workers",
           evidence=evidence, depends_on=() if own else (ZOMBIE_CHECK,))


@pytest.mark.check(ZOMBIE_CHECK)  # named where it could not be reached too (a host not ready), not by the test's name
def test_no_zombie_gpu_workers(host, facts, expect, settings):
    rule = host.gpu_processes
    if rule.stack != "up":
        pytest.skip("the stack is declared down: hosts.gpu.stray_processes says nothing may hold the GPUs")
    judged = _judgement(host, facts, settings)
    if judged is None:
        pytest.skip("this recording holds no `fuser -v /dev/nvidia*` (recorded before the GPU holder read)")
    judgement, _, note = judged
    zombies = judgement.zombie_text()
    evidence = [f"pid {h.pid} {h.name}: {why}" for h, why in judgement.attached]
    evidence += [f"pid {h.pid} {h.name}: not judged ({why})" for h, why in judgement.unjudged]
    evidence += [f"pid {s.holder.pid} {s.holder.name}: its server pid {s.server_pid} serves port {s.port}, which no "
                 "endpoint declares (a stray server: see hosts.gpu.stray_processes)" for s in judgement.servers]
    evidence += [judgement.ports] if judgement.ports else []
    evidence += [note] if note else []
    evidence += [f"judged without what this recording lacks: {judgement.missing}"] if judgement.missing else []
    expect(host.name, ZOMBIE_CHECK, expected="every serving process that holds the GPUs belongs to a running server "
           "(it or an ancestor serves the endpoint's port)", observed="; ".join(zombies) or "none",
           ok=not zombies, hint=rule.cleanup_hint or ZOMBIE_HINT, evidence="; ".join(evidence))
