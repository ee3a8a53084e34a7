"""Issue 21.1/21.2: GPU holders named as the kernel prints them, and the zombie worker of the seeds as one verdict.

The answers (zombie_answers.py) are REAL-SHAPED, not recorded: that module says what each is shaped after.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from llmval.gpu.holders import Holder, judge, lineage, match_name
from llmval.hostfacts import COMMANDS, HostFacts, holder_is_allowed
from llmval.hostfacts.processes import GPU_APPS, LISTENING, PORT_PIDS, PROCESS_ROWS
from llmval.inventory import HostSpec
from llmval.io.transport import connect
from llmval.parsers.procs import ComputeApp, parse_compute_apps, parse_fuser_verbose, parse_ps_rows
from selftest.strategies import ROOT

from ._contract import run_hosts
from .zombie_answers import (
    ALLOWED,
    API,
    APPS,
    FUSER_HEALTHY,
    FUSER_ZOMBIE,
    INVENTORY,
    LISTEN_CLOSED,
    LISTEN_HEALTHY,
    PS_API,
    PS_ENGINE_HEALTHY,
    PS_ENGINE_ORPHAN,
    UUID,
    write_replay,
)

pytest_plugins = ["pytester"]


def test_engine_core_is_allowed_by_the_name_owners_write_and_the_verdict_says_which_matched():
    holders = {h.pid: h for h in parse_fuser_verbose(FUSER_HEALTHY)}
    assert holders[4242].command == "VLLM::EngineCor"  # what the kernel keeps
    # the fallback of a recording without command lines understands the cut as the live path does (issue 31.6)
    assert holder_is_allowed(holders[4242], None, ["VLLM::EngineCore"], []).startswith("allowed as `VLLM::EngineCore`")
    assert holder_is_allowed(holders[4242], None, ["VLLM::Engine"], []) is None
    rows = {r.pid: r for r in parse_ps_rows(PS_ENGINE_HEALTHY + PS_API)}
    engine = match_name("VLLM::EngineCor", rows[4242].args, ALLOWED)
    assert engine.allowed == "VLLM::EngineCore"
    assert engine.how == "its process title `VLLM::EngineCore` (fuser prints the 15-character comm `VLLM::EngineCor`)"
    api = match_name("python3", rows[4101].args, ALLOWED)
    assert api.allowed == ALLOWED[1] and api.how.startswith("its command line `python3 -m vllm.entrypoints")
    # without a command line (the process exited between the reads) the kernel's cut is understood, and said
    assert "15-character cut of `VLLM::EngineCore`" in match_name("VLLM::EngineCor", None, ALLOWED).how
    # a name is matched whole, never as a substring or a shorter comm
    assert match_name("VLLM::Engine", None, ALLOWED) is None
    assert match_name("python3", "python3 -m vllm.entrypoints.openai.api_server_fake", [ALLOWED[1]]) is None
    program = match_name("pt_main_thread", "/usr/bin/python3 train.py", ["python3"])  # torch renames its thread
    assert program.how == "its program `/usr/bin/python3`"


def _holders(fuser: str, ps: str) -> tuple[list[Holder], dict]:
    rows = {r.pid: r for r in parse_ps_rows(ps)}
    apps = parse_compute_apps(APPS)
    out = [Holder(h.pid, h.command, rows.get(h.pid), None, match_name(h.command, rows[h.pid].args, ALLOWED),
                  tuple(a for a in apps if a.pid == h.pid)) for h in parse_fuser_verbose(fuser)]
    return out, rows


def test_a_healthy_stack_is_attached_through_the_api_server_that_serves_the_port():
    holders, rows = _holders(FUSER_HEALTHY, PS_ENGINE_HEALTHY + PS_API)
    judged = judge(holders, rows, [8000], {8000: [0], 22: [0]}, {8000: [4101]})
    assert judged.zombies == [] and judged.strays == []
    why = {h.pid: w for h, w in judged.attached}
    assert why == {4242: f"its ancestor pid 4101 ({API[:77]}...) serves port 8000", 4101: "it serves port 8000"}


def test_the_orphaned_engine_core_is_a_zombie_with_pid_name_age_and_gpu_memory():
    holders, rows = _holders(FUSER_ZOMBIE, PS_ENGINE_ORPHAN)
    judged = judge(holders, rows, [8000], {22: [0]}, {})
    assert judged.attached == [] and judged.strays == []
    [text] = judged.zombie_text()
    # the GPU memory early: a verdict shortened to 400 characters keeps it (issue 31.1); the name match last
    assert text == (f"pid 4242 VLLM::EngineCore, holds 44.0 GiB (45056 MiB) on {UUID}, up 3 min 27 s, its parent is "
                    "gone (PPID 1), port 8000: nothing listens (allowed as `VLLM::EngineCore`: its process title "
                    "`VLLM::EngineCore` (fuser prints the 15-character comm `VLLM::EngineCor`))")
    assert judged.ports == "port 8000: nothing listens"


def test_a_worker_whose_server_was_replaced_is_a_zombie_too():
    """The kpro6 case: the old engine's worker survives, a new server serves the port (and OOMs)."""
    holders, rows = _holders(FUSER_ZOMBIE, "   4242    3999     207 VLLM::EngineCore\n   3999       1  9000 bash\n")
    judged = judge(holders, rows, [8000], {8000: [0]}, {8000: [5555]})
    [(zombie, why)] = judged.zombies
    assert zombie.pid == 4242
    assert why == "its parent pid 3999 (bash) serves no declared port, port 8000 is served by another process tree"


def test_without_a_visible_listener_or_a_declared_port_nothing_is_called_a_zombie():
    holders, rows = _holders(FUSER_ZOMBIE, PS_ENGINE_ORPHAN)
    hidden = judge(holders, rows, [8000], {8000: [1000]}, {8000: []})
    assert hidden.zombies == [] and "fuser cannot see its process" in hidden.unjudged[0][1]
    assert judge(holders, rows, [], {}, {}).unjudged[0][1].startswith("no endpoint is declared on this host")


def test_a_holder_nvidia_smi_does_not_account_says_so():
    holder = Holder(4242, "VLLM::EngineCor", apps=(ComputeApp(4242, None, UUID, "VLLM::EngineCore"),))
    assert holder.memory() == f"GPU memory: not reported by nvidia-smi ({UUID})"
    assert Holder(4242, "x").memory() == "GPU memory: nvidia-smi lists no compute app with this pid"


@pytest.mark.subprocess
def test_the_process_facts_read_this_machine_for_real(tmp_path):
    """The declared commands, live: a real listener on a free port, its pid from fuser, its row and parents."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # each HostFacts reads once (memoized): a fresh one per look until it listens
            facts = HostFacts(connect(HostSpec(name="me", platform="p")))
            if port in facts.listening_ports():
                break
            time.sleep(0.1)  # the server's start, not a readiness wait of the suite
        assert port in facts.listening_ports()
        assert facts.port_pids(port) == [server.pid]
        rows = lineage(facts, [server.pid])
        assert rows[server.pid].args.endswith(f"-m http.server {port} --bind 127.0.0.1")
        assert rows[server.pid].ppid in rows or rows[server.pid].ppid <= 1  # its parents were read up
    finally:
        server.terminate()
        server.wait(10)
    assert HostFacts(connect(HostSpec(name="me", platform="p"))).port_pids(port) == []


@pytest.mark.parametrize("case", ["healthy", "zombie"])
def test_the_host_contract_names_the_zombie_and_folds_the_stray_check_under_it(pytester, case):
    """REAL-SHAPED answers (module docstring) replayed through tests/hosts: healthy passes (the engine allowed by
    its title); the zombie fails hosts.gpu.zombie_workers with pid, name, age, GPU memory and the inventory's
    cleanup hint, and the stray check is its dependent, not a second root cause."""
    answers = {COMMANDS["uname"].render(): "Linux h200 6.8.0 #1 SMP x86_64 GNU/Linux\n",
               COMMANDS["gpu-holders"].render(): FUSER_HEALTHY if case == "healthy" else FUSER_ZOMBIE,
               GPU_APPS.render(): APPS, LISTENING.render(): LISTEN_HEALTHY if case == "healthy" else LISTEN_CLOSED}
    if case == "healthy":
        answers[PROCESS_ROWS.render(pids="4101,4242")] = PS_API + PS_ENGINE_HEALTHY
        answers[PORT_PIDS.render(port=8000)] = " 4101\n"
    else:
        answers[PROCESS_ROWS.render(pids="4242")] = PS_ENGINE_ORPHAN
    write_replay(pytester.path / "rec", answers)
    (pytester.path / "inv.toml").write_text(INVENTORY)
    result, outcomes = run_hosts(pytester, "--inventory", str(pytester.path / "inv.toml"), "--replay",
                                 str(pytester.path / "rec"), "-p", "no:xdist")
    short = {n.split("::")[1]: o for n, o in outcomes.items()}
    if case == "healthy":
        assert short["test_no_stray_gpu_processes[h200]"][0] == "passed", result.stdout.str()[-3000:]
        assert short["test_no_zombie_gpu_workers[h200]"][0] == "passed", result.stdout.str()[-3000:]
        verdicts = json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]
        stray = next(t for t in verdicts if "stray" in t["nodeid"])["verdicts"][-1]
        assert "pid 4242 VLLM::EngineCor: allowed as `VLLM::EngineCore`: its process title" in stray["evidence"]
        return
    outcome, message = short["test_no_zombie_gpu_workers[h200]"]
    assert outcome == "failed", result.stdout.str()[-3000:]
    for needle in ("[h200] hosts.gpu.zombie_workers", "pid 4242 VLLM::EngineCore", "up 3 min 27 s",
                   "its parent is gone (PPID 1)", "port 8000: nothing listens", "holds 44.0 GiB (45056 MiB)",
                   "hint: zombie workers: `kill <pid>`"):
        assert needle in message, message
    assert "zombie worker: see hosts.gpu.zombie_workers" in short["test_no_stray_gpu_processes[h200]"][1]
    # tests/hosts alone is a partial run (issue 20.6): its status document is under reports/partial/
    status = (pytester.path / "reports" / "replay" / "partial" / "status.md").read_text()
    failing = status.split("### Failing", 1)[1].split("\n### ", 1)[0]
    roots = [line for line in failing.splitlines() if line.startswith("- ")]
    assert len(roots) == 1 and "hosts.gpu.zombie_workers" in roots[0], failing
    assert "hosts.gpu.stray_processes" in failing.split(roots[0], 1)[1], failing


# ---- issue 31.1: a live, undeclared second server is a stray server, not a zombie ---------------------------------
# SYNTHESIZED from REAL-h200-vllm-0.24.0-healthy (its commands, their REAL answers) with the second vLLM of issue
# 31.1 added in the same formats: its API server pid 2188 (`python3 -m vllm... --port 8001`, parent pid 2171
# `bash`) and EngineCore pid 2205 hold the GPU (29580 MiB, the figure), and port 8001 listens, held by 2188.
REAL_HEALTHY = ROOT / "selftest" / "data" / "replays" / "REAL-h200-vllm-0.24.0-healthy"
SECOND_API = ("python3 -m vllm.entrypoints.openai.api_server --model /tmp/model --served-model-name smollm2 "
              "--host 127.0.0.1 --port 8001 --dtype bfloat16 --max-model-len 8192 --gpu-memory-utilization 0.2")


def _with_a_second_server(folder, port_owner_read: bool = True) -> None:
    [path] = REAL_HEALTHY.glob("commands-*.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    by_command = {r["command"]: r for r in records}
    fuser = COMMANDS["gpu-holders"].render()
    table = by_command[fuser]["stdout"]
    assert "922 F.... python3" in table and "1119 F...m VLLM::EngineCor" in table
    by_command[fuser]["stdout"] = table.replace(
        "                     root       1119 F...m VLLM::EngineCor\n",
        "                     root       1119 F...m VLLM::EngineCor\n"
        "                     root       2188 F.... python3\n"
        "                     root       2205 F...m VLLM::EngineCor\n")
    apps = by_command[GPU_APPS.render()]
    apps["stdout"] += "2205, 29580, GPU-cc7b08ac-635c-767f-0a8d-7980fb128a3d, VLLM::EngineCore\n"
    listening = by_command[LISTENING.render()]
    listening["stdout"] += "0100007F:1F41 0\n"  # 127.0.0.1:8001
    old_rows = by_command.pop(PROCESS_ROWS.render(pids="922,1119"))
    extra = [{**old_rows, "command": PROCESS_ROWS.render(pids="922,1119,2188,2205"),
              "stdout": old_rows["stdout"] + f" 2188  2171     301 {SECOND_API}\n"
                                             " 2205  2188     262 VLLM::EngineCore\n"},
             {**old_rows, "command": PROCESS_ROWS.render(pids="2171"), "stdout": " 2171     1     302 bash\n"},
             {**old_rows, "command": PORT_PIDS.render(port=8001), "stdout": "  2188"}][:None if port_owner_read else 2]
    folder.mkdir()
    (folder / path.name).write_text("".join(json.dumps(r) + "\n" for r in [*by_command.values(), *extra]))


def test_a_second_server_s_holders_are_a_stray_server_named_by_port_pid_and_memory():
    """The judgement alone: the second server's API server and engine core are one stray server on port 8001, not
    zombies; the declared server stays attached."""
    rows = {r.pid: r for r in parse_ps_rows(f" 922     1  112 {API}\n 1119  922  75 VLLM::EngineCore\n"
                                            f" 2188  2171  301 {SECOND_API}\n 2205  2188  262 VLLM::EngineCore\n"
                                            " 2171     1  302 bash\n")}
    apps = parse_compute_apps(f"1119, 44222, {UUID}, VLLM::EngineCore\n2205, 29580, {UUID}, VLLM::EngineCore\n")
    holders = [Holder(pid, comm, rows[pid], None, match_name(comm, rows[pid].args, ALLOWED),
                      tuple(a for a in apps if a.pid == pid))
               for pid, comm in ((922, "python3"), (1119, "VLLM::EngineCor"), (2188, "python3"),
                                 (2205, "VLLM::EngineCor"))]
    listening = {8000: [0], 8001: [0], 22: [0]}
    first = judge(holders, rows, [8000], listening, {8000: [922]})
    assert [h.pid for h, _ in first.zombies] == [2188, 2205]  # the bug: what they were called before
    from llmval.gpu.holders import other_server_ports

    asked = other_server_ports([h for h, _ in first.zombies], rows, [8000], listening, [8000, 30000])
    assert asked == {8001: [2188, 2171, 2205]}  # the port the tree was told to serve, not every listening one
    judged = judge(holders, rows, [8000], listening, {8000: [922]}, {2188: 8001})
    assert judged.zombies == [] and [h.pid for h, _ in judged.attached] == [922, 1119]
    assert judged.server_text() == [
        "a server on port 8001 that no endpoint declares: pid 2188 python3 -m vllm.entrypoints.openai.api_server "
        f"(with pid 2205 VLLM::EngineCore) holds 28.9 GiB (29580 MiB) on {UUID}"]


def test_the_host_contract_names_a_second_server_as_a_stray_with_its_port_and_memory(pytester):
    _with_a_second_server(pytester.path / "rec")
    result, outcomes = run_hosts(pytester, "--inventory", str(REAL_HEALTHY / "inventory.toml"), "--replay",
                                 str(pytester.path / "rec"), "-p", "no:xdist")
    short = {n.split("::")[1]: o for n, o in outcomes.items()}
    assert short["test_no_zombie_gpu_workers[h200]"][0] == "passed", result.stdout.str()[-3000:]
    outcome, message = short["test_no_stray_gpu_processes[h200]"]
    assert outcome == "failed", result.stdout.str()[-3000:]
    assert ("a server on port 8001 that no endpoint declares: pid 2188 python3 -m vllm.entrypoints.openai.api_server "
            "(with pid 2205 VLLM::EngineCore) holds 28.9 GiB (29580 MiB) on GPU-cc7b08ac") in message, message
    assert "zombie" not in message.split("hint:")[0] and "more characters" not in message, message
    assert "a second server holds GPU memory on a port no endpoint declares" in message
    status = (pytester.path / "reports" / "replay" / "partial" / "status.md").read_text()
    failing = status.split("### Failing", 1)[1].split("\n### ", 1)[0]
    roots = [line for line in failing.splitlines() if line.startswith("- ")]
    assert len(roots) == 1 and "`hosts.gpu.stray_processes` on h200" in roots[0], failing
    assert "could not run because `" not in failing, failing  # it ran and failed: a root cause, not a dependent


def test_a_second_server_whose_port_owner_was_not_read_is_still_a_stray_server(pytester):
    """Issue 44.4: the same second server in a recording without `fuser 8001/tcp`: its own argv says --port 8001
    and 8001 listens, so it is a stray server (and says how it was tied to the port), never a zombie."""
    _with_a_second_server(pytester.path / "rec", port_owner_read=False)
    result, outcomes = run_hosts(pytester, "--inventory", str(REAL_HEALTHY / "inventory.toml"), "--replay",
                                 str(pytester.path / "rec"), "-p", "no:xdist")
    short = {n.split("::")[1]: o for n, o in outcomes.items()}
    assert short["test_no_zombie_gpu_workers[h200]"][0] == "passed", result.stdout.str()[-3000:]
    outcome, message = short["test_no_stray_gpu_processes[h200]"]
    assert outcome == "failed" and "a server on port 8001 that no endpoint declares: pid 2188" in message, message
    assert "its own command line says --port 8001, and port 8001 listens" in message, message
