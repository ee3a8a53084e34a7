"""Host checks at fleet scale (issue 24.7): facts read once however many threads ask, peers read at once, only the
selected hosts read, and under xdist each host read by the one worker that runs its checks.

The runs use stand-in hosts (selftest/hosts/standin.py: real processes on this machine) and read what the run
sent from its own recording (`--record`: one commands-<pid>.jsonl per process)."""

from __future__ import annotations

import ast
import json
import os
import threading
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from fixtures.fleet import PEER_CHECKS, auto_workers, inventory_hosts
from llmval.core.errors import HostUnreachable
from llmval.hostfacts import COMMANDS, FACTS, HostFacts, Prefetch, fact_plan, peer_facts, read_ahead
from llmval.inventory import load_inventory
from llmval.io.transport import connect
from selftest.strategies import ROOT

from ._contract import not_passed, run_hosts
from .measure_scheduler import SyntheticWorker, host_scheduler
from .standin import make_standins

pytest_plugins = ["pytester"]


def _sent(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """{recording file name: [(host, command), ...]} of a `--record` folder."""
    return {path.name: [(r["host"], r["command"]) for r in map(json.loads, path.read_text().splitlines())]
            for path in sorted(folder.glob("commands-*.jsonl"))}


def test_a_fact_asked_by_many_threads_at_once_is_read_once(tmp_path):
    inventory = load_inventory(make_standins(tmp_path, ["one"], latency_s=0.3))
    facts = HostFacts(connect(inventory.hosts[0], inventory=inventory))
    sent: list[str] = []
    run = facts.connection.run

    def counting(command, **kwargs):
        sent.append(str(command))
        return run(command, **kwargs)

    facts.connection.run = counting  # type: ignore[method-assign]
    answers: list[object] = []
    threads = [threading.Thread(target=lambda: answers.append(facts.gpus())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 8 and all(a == answers[0] for a in answers) and len(answers[0]) == 2  # type: ignore[arg-type]
    assert len(sent) == 1 and sent[0].startswith("nvidia-smi --query-gpu=")
    assert facts.is_read("gpus")


def test_prefetch_reads_every_planned_fact_of_every_host_once(tmp_path):
    inventory = load_inventory(make_standins(tmp_path, ["a", "b", "c"]))
    hosts = [(spec, HostFacts(connect(spec, inventory=inventory))) for spec in inventory.hosts]
    Prefetch(hosts).wait()
    for spec, facts in hosts:
        plan = fact_plan(spec)
        assert plan and all(facts.is_read(name, *args) for name, args in plan
                            if read_ahead(FACTS[name], facts)), spec.name
        assert ("uname", ()) in plan and facts.uname().rc == 0  # hosts.reachable's answer, read ahead too
        assert {name for name, _ in plan} <= set(FACTS)


def test_gpu_memory_and_ports_are_read_ahead_only_where_gpu_holders_were_found(tmp_path):
    """The host checks read `gpu_apps` and `listening_ports` only when fuser lists GPU holders
    (llmval.gpu.holders.read_judgement): Prefetch reads them ahead only there. Idle stand-ins (this machine's real
    fuser: no holders) send neither command; a replayed host with the zombie self-test's REAL-SHAPED holders
    gets both read ahead, one command each."""
    from llmval.io.recording import Replay

    from .zombie_answers import APPS, FUSER_ZOMBIE, INVENTORY, LISTEN_CLOSED, write_replay

    assert FACTS["gpu_apps"].ahead_if is not None and FACTS["listening_ports"].ahead_if is not None
    inventory = load_inventory(make_standins(tmp_path, ["a", "b"]))
    hosts = [(spec, HostFacts(connect(spec, inventory=inventory))) for spec in inventory.hosts]
    Prefetch(hosts).wait()
    for spec, facts in hosts:
        planned = {name for name, _ in fact_plan(spec)}
        assert {"gpu_holders", "gpu_apps", "listening_ports"} <= planned
        assert facts.is_read("gpu_holders") and facts.gpu_holders() == []
        assert not facts.is_read("gpu_apps") and not facts.is_read("listening_ports"), spec.name
        assert all(facts.is_read(name, *args) for name, args in fact_plan(spec)
                   if FACTS[name].ahead_if is None), spec.name

    (tmp_path / "zombie.toml").write_text(INVENTORY)
    zombie = load_inventory(tmp_path / "zombie.toml")
    answers = {COMMANDS["uname"].render(): "Linux h200 6.8.0 #1 SMP x86_64 GNU/Linux\n",
               COMMANDS["gpu-holders"].render(): FUSER_ZOMBIE, COMMANDS["gpu-apps"].render(): APPS,
               COMMANDS["tcp-listening"].render(): LISTEN_CLOSED}
    write_replay(tmp_path / "rec", answers)
    connection = connect(zombie.hosts[0], replay=Replay(tmp_path / "rec"))
    sent: list[str] = []
    run = connection.run

    def counting(command, **kwargs):
        sent.append(str(command))
        return run(command, **kwargs)

    connection.run = counting  # type: ignore[method-assign]
    facts = HostFacts(connection)
    Prefetch([(zombie.hosts[0], facts)]).wait()
    assert [h.pid for h in facts.gpu_holders()] == [4242]
    assert facts.is_read("gpu_apps") and facts.is_read("listening_ports")
    assert Counter(sent)[COMMANDS["gpu-apps"].render()] == 1 and Counter(sent)[COMMANDS["tcp-listening"].render()] == 1


def test_peers_not_yet_read_are_read_at_once_in_the_order_asked():
    delay_s = 0.3
    asked: list[str] = []

    def get(name: str) -> str:
        asked.append(name)
        time.sleep(delay_s)  # a peer this process does not hold yet: one command's round trip
        if name == "p3":
            raise HostUnreachable("p3", "nvidia-smi", "ssh failed (rc 255): no route to host")
        return f"535.{name}"

    names = [f"p{i}" for i in range(1, 9)]
    started = time.monotonic()
    values, errors = peer_facts(get, names)
    elapsed = time.monotonic() - started
    assert list(values) == [n for n in names if n != "p3"] and values["p8"] == "535.p8"
    assert list(errors) == ["p3"] and "no route to host" in errors["p3"]
    assert sorted(asked) == sorted(names)  # each once
    assert elapsed < 4 * delay_s, f"8 peers took {elapsed:.2f} s: read one by one ({8 * delay_s:.1f} s) or nearly"


def test_memoized_peers_are_asked_in_this_thread_one_by_one():
    threads: set[str] = set()

    def get(name: str) -> str:
        threads.add(threading.current_thread().name)
        return name.upper()

    values, errors = peer_facts(get, ["x", "y", "z"])
    assert values == {"x": "X", "y": "Y", "z": "Z"} and errors == {}
    assert threads == {threading.current_thread().name}


def test_a_run_of_one_selected_host_reads_only_that_host(pytester, tmp_path):
    inventory = make_standins(tmp_path, ["sel-a", "sel-b", "sel-c"])
    result, outcomes = run_hosts(pytester, "--inventory", str(inventory), "-p", "no:xdist", "-m", "smoke",
                                 "-k", "sel-b and not tiny", "--record", str(tmp_path / "rec"))
    assert outcomes and not_passed(outcomes) == {}, result.stdout.str()[-3000:]
    hosts = {host for rows in _sent(tmp_path / "rec").values() for host, _ in rows}
    # sel-b's driver is compared with its platform peers (their GPU query only); nothing else of theirs is read
    peers = Counter(host for rows in _sent(tmp_path / "rec").values() for host, _ in rows if host != "sel-b")
    assert "sel-b" in hosts and set(peers) <= {"sel-a", "sel-c"} and all(n == 1 for n in peers.values()), peers


def _verdicts(pytester) -> dict[str, list[dict]]:
    """{nodeid: its verdicts and measured values} of the last run's results.json (run_hosts' reports folder)."""
    tests = json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]
    return {t["nodeid"]: [*t["verdicts"], *t["measured"]] for t in tests}


@pytest.mark.parametrize("workers", ["2", "3"])
def test_under_xdist_each_host_is_read_by_the_worker_that_runs_its_checks(pytester, tmp_path, workers):
    names = [f"w{i}" for i in range(1, 6)]
    inventory = make_standins(tmp_path, names)
    _, serial = run_hosts(pytester, "--inventory", str(inventory), "-p", "no:xdist", "-m", "smoke",
                          "--record", str(tmp_path / "serial"))
    serial_verdicts = _verdicts(pytester)
    result, parallel = run_hosts(pytester, "--inventory", str(inventory), "-n", workers, "-m", "smoke",
                                 "--record", str(tmp_path / "rec"))
    assert not_passed(parallel) == {}, result.stdout.str()[-3000:]
    assert {n: o for n, (o, _) in serial.items()} == {n: o for n, (o, _) in parallel.items()}
    assert _verdicts(pytester) == serial_verdicts  # each verdict once, as one process states it
    one_process = [row for rows in _sent(tmp_path / "serial").values() for row in rows]
    sent = _sent(tmp_path / "rec")
    assert len(sent) == int(workers), sorted(sent)
    per_host = {name: {file: Counter(c for h, c in rows if h == name) for file, rows in sent.items()} for name in names}
    owner_of = {name: max(counts, key=lambda f: sum(counts[f].values())) for name, counts in per_host.items()}
    for name in names:
        expected = Counter(c for h, c in one_process if h == name)
        per_worker, owner = per_host[name], owner_of[name]
        # the owner sends what one process sends for that host (less the planned facts no check asked for, where
        # it holds one host and reads it as asked); another worker asks it at most for what a cross-host check
        # of its own needs: the group's model files, and only on the worker of the platform's first host (which
        # runs every driver comparison of the platform) the GPU query
        assert per_worker[owner] and per_worker[owner] <= expected, (name, per_worker[owner], expected)
        for file, counts in per_worker.items():
            if file != owner:
                allowed = {"find", "nvidia-smi"} if file == owner_of[names[0]] else {"find"}
                assert sum(counts.values()) <= 2 and {c.split()[0] for c in counts} <= allowed, (name, file, counts)
    assert len(set(owner_of.values())) == int(workers), owner_of  # the hosts are spread over every worker


def test_what_collection_built_is_frozen_out_of_the_garbage_collector(pytester):
    """fixtures/heap.py: after collection the session's objects are frozen (gc.freeze): a list built when the
    test module was imported is in none of the collector's generations (it is without the plugin)."""
    pytester.makepyfile(test_frozen="""
        import gc

        BUILT_AT_COLLECTION = [object()]

        def test_collected_objects_are_frozen():
            assert gc.get_freeze_count() > 0
            assert not any(o is BUILT_AT_COLLECTION for o in gc.get_objects())  # in the permanent generation
        """)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:cacheprovider", "-q")
    assert result.ret == 0, result.stdout.str()[-2000:]


def test_a_check_asking_a_fact_not_read_yet_waits_for_its_hosts_thread(tmp_path):
    """Prefetch: a fact asked before its host's thread came to it is read by that thread, next (`want`), never by
    the asking thread beside it: the host still sees one command at a time, and every host's thread reads
    that fact next (the same check runs for the next hosts)."""
    inventory = load_inventory(make_standins(tmp_path, ["a", "b", "c"], latency_s=0.2))
    hosts = [(spec, HostFacts(connect(spec, inventory=inventory))) for spec in inventory.hosts]
    sent: list[tuple[str, str, str]] = []
    for _, facts in hosts:
        run = facts.connection.run

        def counting(command, *, _run=run, _name=facts.name, **kwargs):
            sent.append((_name, threading.current_thread().name, str(command)))
            return _run(command, **kwargs)

        facts.connection.run = counting  # type: ignore[method-assign]
    reading = Prefetch(hosts)
    try:
        answers = [facts.uname().rc for _, facts in hosts]  # planned last: asked first
    finally:
        reading.wait()
    assert answers == [0, 0, 0]
    for spec, _ in hosts:
        own = [(thread, command) for host, thread, command in sent if host == spec.name]
        assert all(thread.startswith("llmval-prefetch") for thread, _ in own), own
        commands = [command for _, command in own]
        # read next, after the read under way when it was asked (its plan has it last, after 8 other commands)
        assert commands.count("uname -a") == 1 and commands.index("uname -a") <= 2, commands
        assert len(commands) == len(set(commands)), commands


def test_host_checks_run_check_by_check_over_the_hosts(pytester, tmp_path):
    """A run of several hosts orders the host checks check by check (every host's first check, then every host's
    second ...), so checks compare one fact while the next is read; one process's verdicts are those of the
    host-by-host order (the stand-ins are healthy: all pass)."""
    inventory = make_standins(tmp_path, ["a", "b", "c"])
    _, outcomes = run_hosts(pytester, "--inventory", str(inventory), "-m", "smoke", "-p", "no:xdist")
    assert not not_passed(outcomes), not_passed(outcomes)
    order = [nodeid for nodeid in outcomes if "[" in nodeid]
    checks = list(dict.fromkeys(nodeid.split("[")[0] for nodeid in order))
    runs = [nodeid.split("[")[0] for nodeid in order]
    assert runs == sorted(runs, key=checks.index), order[:12]
    assert [nodeid.split("[")[1] for nodeid in order[:3]] == ["a]", "b]", "c]"], order[:3]


def test_the_host_scheduler_sends_each_test_once_to_its_hosts_worker_and_counts_what_each_still_holds(tmp_path):
    """fixtures/fleet.py's scheduler driven as xdist's controller drives it (the workers and their collection are
    synthesized: four check names over five stand-in hosts, and two tests of no host), each worker finishing
    its tests in order: every test is sent once, a host's to worker i mod 2, and the tests a worker still holds
    are what xdist's own count walks out of its units."""
    from xdist.scheduler import LoadScopeScheduling

    names = [f"w{i}" for i in range(1, 6)]
    inventory = load_inventory(make_standins(tmp_path, names, with_model=False))
    collection = [f"tests/hosts/test_x.py::test_{check}[{name}]" for check in "abcd" for name in names]
    collection += ["tests/hosts/test_x.py::test_no_host", "tests/hosts/test_x.py::test_other"]
    scheduler, workers = host_scheduler(inventory, 2), [SyntheticWorker(0), SyntheticWorker(1)]
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, list(collection))
    scheduler.schedule()
    done: dict[str, list[str]] = {"gw0": [], "gw1": []}
    while any(worker.sent for worker in workers):
        for worker in workers:
            if worker.sent:
                done[worker.gateway.id].append(collection[worker.sent.pop(0)])
                scheduler.mark_test_complete(worker, collection.index(done[worker.gateway.id][-1]))
            for held in scheduler.assigned_work.values():
                assert scheduler._pending_of(held) == LoadScopeScheduling._pending_of(scheduler, held)
    assert sorted(done["gw0"] + done["gw1"]) == sorted(collection)
    for worker_id, nodeids in done.items():
        hosts = {nodeid.split("[")[1].rstrip("]") for nodeid in nodeids if "[" in nodeid}
        assert hosts == {name for i, name in enumerate(names) if f"gw{i % 2}" == worker_id}, (worker_id, hosts)
    assert scheduler.tests_finished and not scheduler.has_pending


def test_a_check_that_reads_every_peer_of_its_platform_goes_to_the_worker_of_the_platforms_first_host(tmp_path):
    """PEER_CHECKS (the driver comparison) of every host of a platform run on one worker, so that one worker reads
    the peers it does not own (each of N workers read them all: N reads of every host's GPU query at once);
    the other checks of a host stay with its owner (synthesized workers, as above)."""
    names = [f"w{i}" for i in range(1, 6)]
    inventory = load_inventory(make_standins(tmp_path, names, with_model=False))
    collection = [f"tests/hosts/test_driver.py::{check}[{name}]" for check in ("test_driver_equal_across_platform",
                                                                                 "test_driver_at_least_minimum")
                  for name in names]
    scheduler, workers = host_scheduler(inventory, 3), [SyntheticWorker(i) for i in range(3)]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, list(collection))
    scheduler.schedule()
    got = {worker.gateway.id: sorted(collection[i] for i in worker.sent) for worker in workers}
    same, minimum = "tests/hosts/test_driver.py::test_driver_equal_across_platform", \
        "tests/hosts/test_driver.py::test_driver_at_least_minimum"
    assert got["gw0"] == sorted([*(f"{same}[{n}]" for n in names), f"{minimum}[w1]", f"{minimum}[w4]"]), got
    assert got["gw1"] == [f"{minimum}[w2]", f"{minimum}[w5]"], got


def test_every_contract_check_that_reads_peers_is_scheduled_as_one():
    """A contract test that calls peer_facts, itself or through a function of its module (test_driver.py asks the
    peers once per platform in `_platform_drivers`), is named in fixtures/fleet.py's PEER_CHECKS (else under xdist
    every worker would read every peer again)."""
    def calls(node: ast.AST, names: set[str]) -> bool:
        return any(isinstance(call, ast.Call) and getattr(call.func, "id", None) in names for call in ast.walk(node))

    callers = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        functions = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]
        readers = {"peer_facts"} | {f.name for f in functions if not f.name.startswith("test_")
                                    and calls(f, {"peer_facts"})}
        callers |= {f.name for f in functions if f.name.startswith("test_") and calls(f, readers)}
    assert callers and callers == PEER_CHECKS, (callers, PEER_CHECKS)


def test_a_crashed_workers_unfinished_tests_go_to_its_replacement(tmp_path):
    """xdist replaces a crashed worker (a new id) and schedules again: the replacement gets the crashed one's share,
    less what it finished (the workers are synthesized, as above)."""
    names = ["g1", "g2"]
    inventory = load_inventory(make_standins(tmp_path, names, with_model=False))
    collection = [f"tests/hosts/test_x.py::test_{check}[{name}]" for check in "abc" for name in names]
    scheduler, workers = host_scheduler(inventory, 2), [SyntheticWorker(0), SyntheticWorker(1)]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, list(collection))
    scheduler.schedule()
    first = workers[0].sent.pop(0)
    scheduler.mark_test_complete(workers[0], first)
    crashed = scheduler.remove_node(workers[0])
    assert crashed == collection[workers[0].sent[0]]  # the test it was running when it went
    replacement = SyntheticWorker(2)
    scheduler.add_node(replacement)
    scheduler.add_node_collection(replacement, list(collection))
    scheduler.schedule()
    assert sorted(collection[i] for i in replacement.sent) == sorted(collection[i] for i in workers[0].sent)
    for worker in (replacement, workers[1]):
        while worker.sent:
            scheduler.mark_test_complete(worker, worker.sent.pop(0))
    assert scheduler.tests_finished and not scheduler.has_pending


@pytest.mark.parametrize(("hosts", "cpus", "workers"), [
    (1, 16, 0), (4, 16, 0), (128, 16, 0), (255, 16, 0),  # below 256 hosts one process was as fast or faster
    (256, 16, 4), (1024, 16, 4), (1024, 64, 4),  # from 256 hosts workers pay, and more than 4 did not help
    (256, 4, 3), (1024, 3, 2),  # one CPU left to the controller
    (1024, 2, 0),  # two cores: the controller and one worker, no better than one process
])
def test_n_auto_starts_four_workers_from_256_hosts_and_leaves_the_controller_a_cpu(hosts, cpus, workers):
    assert auto_workers(hosts, cpus) == workers


def test_n_auto_on_a_small_fleet_runs_in_one_process_and_says_so(pytester, tmp_path):
    inventory = make_standins(tmp_path, ["s1", "s2"])
    result, outcomes = run_hosts(pytester, "--inventory", str(inventory), "-m", "smoke", "-n", "auto")
    assert outcomes and not_passed(outcomes) == {}, result.stdout.str()[-3000:]
    assert "llmval: -n auto: one process for 2 hosts on" in result.stdout.str()
    assert "created:" not in result.stdout.str()  # xdist says "created: N/N workers" when it starts any


def test_n_auto_counts_the_named_inventorys_hosts_and_never_reads_a_fifo(tmp_path):
    def config(path: Path) -> SimpleNamespace:
        options = {"llmval_inventory": str(path)}
        return SimpleNamespace(getoption=lambda name, default=None: options.get(name, default), rootpath=tmp_path)

    assert inventory_hosts(config(make_standins(tmp_path, ["c1", "c2", "c3"], with_model=False))) == 3
    fifo = tmp_path / "inventory.toml"
    os.mkfifo(fifo)  # nobody writes it: a read would block the run before it starts
    assert inventory_hosts(config(fifo)) is None  # xdist's own count then; pytest_configure says what is wrong
    assert inventory_hosts(config(tmp_path / "missing.toml")) is None
