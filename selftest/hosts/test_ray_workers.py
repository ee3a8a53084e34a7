"""Issue 36: a GPU holder under a raylet (vLLM's `--distributed-executor-backend ray` worker) judged through its
driver: attached when the driver's tree serves a declared port, a zombie when the driver lost its server or Ray
lists no driver, unjudged when Ray cannot be asked or the driver runs on another node.

The answers are REAL, read off the lent H200 on 2026-12-02 by scripts/gpu/ray/scenario.sh (ray_captures.py says
from which run). A case the lent machine could not show (a driver on another node, a job without a driver, a port
the checks cannot see) is a real capture with one thing changed, marked SYNTHESIZED where it is made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import pytest

from llmval.core.errors import CommandFailed, ReplayMiss
from llmval.gpu.holders import describe_holders, judge, match_name, ray_owners, raylet_of, read_judgement
from llmval.hostfacts.ray import RAY_ACTORS
from llmval.parsers.procs import parse_compute_apps, parse_fuser_verbose, parse_listening_ports, parse_ps_rows
from llmval.parsers.ray import parse_ray_actors, parse_ray_jobs, parse_ray_nodes

from .ray_captures import (
    ALLOWED,
    API,
    HEALTHY_ACTORS,
    HEALTHY_APPS,
    HEALTHY_FUSER,
    HEALTHY_JOBS,
    HEALTHY_NODES,
    HEALTHY_PS,
    LISTEN_8000,
    LISTEN_RAY,
    NODEDOWN_NODES,
    RAYLET,
    UUID,
    WORKERKILL_ACTORS,
    WORKERKILL_JOBS,
    ZOMBIE_ACTORS,
    ZOMBIE_APPS,
    ZOMBIE_FUSER,
    ZOMBIE_FUSER_BEFORE,
    ZOMBIE_JOBS,
    ZOMBIE_NODES,
    ZOMBIE_PS,
    ZOMBIE_PS_BEFORE,
    ZOMBIE_SESSION,
    ray_job,
)

ZOMBIE_WORKER = ("Ray actor RayWorkerProc vllm_Worker_1796189067714839977 of job 01000000 RUNNING: its driver pid "
                 "18107 (VLLM::EngineCore)")


@dataclass
class CapturedHost:
    """The host facts `read_judgement` and `ray_owners` call, answered from one capture's texts through the suite's
    own parsers; `ray_error` is raised by every `ray list` (Ray not reachable), `asked` logs the Ray reads."""

    fuser: str
    ps: str
    apps: str
    listening: str
    port_owners: dict[int, list[int]]
    """`fuser -v -n tcp PORT 2>&1` of the capture, as pids (`8000/tcp:  root  2555 F.... python3`)."""
    actors: str = "[]"
    jobs: str = "[]"
    nodes: str = "[]"
    ray_error: Exception | None = None
    asked: list[str] = field(default_factory=list)

    def gpu_holders(self):
        return parse_fuser_verbose(self.fuser)

    def processes(self, pids):
        return {r.pid: r for r in parse_ps_rows(self.ps) if r.pid in pids}

    def gpu_apps(self):
        return parse_compute_apps(self.apps)

    def listening_ports(self):
        return parse_listening_ports(self.listening)

    def port_pids(self, port):
        return self.port_owners.get(port, [])

    def _ray(self, what: str, text: str, parse):
        self.asked.append(what)
        if self.ray_error is not None:
            raise self.ray_error
        return parse(text)

    def ray_actors(self, run_in):
        return self._ray("actors", self.actors, parse_ray_actors)

    def ray_jobs(self, run_in):
        return self._ray("jobs", self.jobs, parse_ray_jobs)

    def ray_nodes(self, run_in):
        return self._ray("nodes", self.nodes, parse_ray_nodes)


RULE = SimpleNamespace(allowed=ALLOWED, allowed_units=[])


def healthy(**changes) -> CapturedHost:
    return replace(CapturedHost(HEALTHY_FUSER, HEALTHY_PS, HEALTHY_APPS, LISTEN_8000 + LISTEN_RAY, {8000: [2555]},
                                HEALTHY_ACTORS, HEALTHY_JOBS, HEALTHY_NODES), **changes)


def zombie(**changes) -> CapturedHost:
    return replace(CapturedHost(ZOMBIE_FUSER, ZOMBIE_PS, ZOMBIE_APPS, LISTEN_RAY, {}, ZOMBIE_ACTORS, ZOMBIE_JOBS,
                                ZOMBIE_NODES), **changes)


def _by_pid(pairs) -> dict[int, str]:
    return {holder.pid: why for holder, why in pairs}


def test_the_captured_rows_parse_as_the_judgement_reads_them():
    """The quoted captures themselves: fuser's 15-character comm, the Ray worker under its raylet, the actor and
    its driver as `ray list` gives them (the driver's pid a string in Ray's JSON)."""
    rows = {r.pid: r for r in parse_ps_rows(ZOMBIE_PS)}
    assert [(h.pid, h.command) for h in parse_fuser_verbose(ZOMBIE_FUSER)] == [(18107, "VLLM::EngineCor"),
                                                                               (19020, "ray::RayWorkerP")]
    assert raylet_of(19020, rows) == 17531 and raylet_of(18107, rows) is None
    [actor] = parse_ray_actors(ZOMBIE_ACTORS)
    assert (actor.pid, actor.class_name, actor.name, actor.state, actor.job_id) == (
        19020, "RayWorkerProc", "vllm_Worker_1796189067714839977", "ALIVE", "01000000")
    [job] = parse_ray_jobs(ZOMBIE_JOBS)
    assert (job.job_id, job.status, job.driver_pid, job.driver_ip) == ("01000000", "RUNNING", 18107, "127.0.1.1")
    assert json.loads(ZOMBIE_JOBS)[0]["entrypoint"].startswith("VLLM::EngineCore \"\" ")


def test_a_healthy_ray_worker_is_attached_through_its_driver_under_the_api_server():
    facts = healthy()
    judged, holders, note = read_judgement(facts, RULE, [8000])
    assert note == "" and judged.zombies == [] and judged.strays == [] and judged.unjudged == []
    why = _by_pid(judged.attached)
    assert why[2555] == "it serves port 8000"
    assert why[2780] == f"its ancestor pid 2555 ({API[:77]}...) serves port 8000"
    assert why[3686] == ("Ray actor RayWorkerProc vllm_Worker_1796187889652315019 of job 01000000 RUNNING: its driver "
                         f"pid 2780 (VLLM::EngineCore) is under pid 2555 ({API[:77]}...), which serves port 8000")
    assert sorted(facts.asked) == ["actors", "jobs", "nodes"]
    worker = next(h for h in holders if h.pid == 3686)
    assert worker.allowed_as.allowed == "ray::RayWorkerProc"
    assert worker.memory() == f"holds 42.9 GiB (43920 MiB) on {UUID}"


def test_the_rayzombie_before_the_kill_is_attached_too():
    facts = CapturedHost(ZOMBIE_FUSER_BEFORE, ZOMBIE_PS_BEFORE, ZOMBIE_APPS, LISTEN_8000 + LISTEN_RAY,
                         {8000: [17987]}, ZOMBIE_ACTORS, ZOMBIE_JOBS, ZOMBIE_NODES)
    judged, _, _ = read_judgement(facts, RULE, [8000])
    assert judged.zombies == [] and sorted(_by_pid(judged.attached)) == [17987, 18107, 19020]
    assert _by_pid(judged.attached)[19020].startswith(f"{ZOMBIE_WORKER} is under pid 17987 (python3 -m vllm")


def test_the_rayzombie_worker_is_a_zombie_whose_driver_lost_its_parent_with_its_gpu_memory():
    """The API server killed with kill -9: its engine core (the Ray driver) orphaned with PPID 1 keeps the Ray
    actor alive, holding 42.9 GiB; both are zombies, the worker named with its actor, job and driver."""
    judged, _, _ = read_judgement(zombie(), RULE, [8000])
    assert judged.attached == [] and judged.strays == [] and judged.unjudged == []
    why = _by_pid(judged.zombies)
    assert why == {18107: "its parent is gone (PPID 1), port 8000: nothing listens",
                   19020: f"{ZOMBIE_WORKER} has lost its parent (PPID 1), port 8000: nothing listens"}
    worker_text = next(t for t in judged.zombie_text() if t.startswith("pid 19020 "))
    assert worker_text.startswith(f"pid 19020 ray::RayWorkerProc.run, holds 42.9 GiB (43920 MiB) on {UUID}, "
                                  "up 1 min 8 s, Ray actor RayWorkerProc")
    assert worker_text.endswith("(allowed as `ray::RayWorkerProc`: its Ray process title `ray::RayWorkerProc.run` "
                                "(actor `ray::RayWorkerProc` running `run`))")


def test_a_worker_whose_driver_is_gone_is_a_zombie_named_with_the_job_status():
    """SYNTHESIZED from rayzombie-smoke/after: the engine core 18107 left out of ps (exited), Ray still listing its
    job RUNNING and the actor ALIVE; the driver's row is asked for and not found."""
    facts = zombie(fuser=ZOMBIE_FUSER.replace("root      18107 F.... VLLM::EngineCor\n                     ", ""),
                   ps=ZOMBIE_PS.replace("18107     1      91 VLLM::EngineCore\n", ""))
    judged, _, _ = read_judgement(facts, RULE, [8000])
    assert _by_pid(judged.zombies) == {19020: (
        "Ray actor RayWorkerProc vllm_Worker_1796189067714839977 of job 01000000 RUNNING: its driver pid 18107 is "
        "gone (job RUNNING), port 8000: nothing listens")}


def test_a_worker_whose_job_lists_no_driver_is_a_zombie():
    """Ray's empty answer (REAL: `No resource in the cluster`, what `ray list jobs --format json` printed on the
    H200 with no job) and, SYNTHESIZED from rayzombie-smoke/after, the same job with `driver_info` null."""
    judged, _, _ = read_judgement(zombie(jobs="No resource in the cluster\n"), RULE, [8000])
    assert _by_pid(judged.zombies)[19020] == ("Ray actor RayWorkerProc vllm_Worker_1796189067714839977 of job "
                                              "01000000 not listed: Ray lists no driver for its job (the engine "
                                              "that owned it is gone)")
    no_driver = json.loads(ZOMBIE_JOBS)
    no_driver[0]["driver_info"] = None
    judged, _, _ = read_judgement(zombie(jobs=json.dumps(no_driver)), RULE, [8000])
    assert _by_pid(judged.zombies)[19020].startswith("Ray actor RayWorkerProc vllm_Worker_1796189067714839977 of "
                                                     "job 01000000 RUNNING: Ray lists no driver for its job")


def test_a_worker_whose_driver_runs_on_another_node_is_left_to_that_node():
    """SYNTHESIZED from rayzombie-smoke/after: the driver's `node_ip_address` set to the second raylet's 127.0.1.2
    (the Sparks' shape: the engine core on the head, a worker on the other Spark)."""
    judged, _, _ = read_judgement(zombie(jobs=ray_job("18107", ip="127.0.1.2")), RULE, [8000])
    assert _by_pid(judged.unjudged) == {19020: (
        "Ray actor RayWorkerProc vllm_Worker_1796189067714839977 of job 01000000 RUNNING: its driver pid 18107 runs "
        "on node 127.0.1.2, not this one (127.0.1.1): judged on the host of its endpoint")}
    assert _by_pid(judged.zombies) == {18107: "its parent is gone (PPID 1), port 8000: nothing listens"}


def test_when_ray_cannot_be_asked_no_ray_worker_is_called_a_zombie():
    failed = CommandFailed("h200", RAY_ACTORS.render(), "exit status 1")  # constructed: the suite's own error
    facts = zombie(ray_error=failed)
    judged, _, _ = read_judgement(facts, RULE, [8000])
    assert _by_pid(judged.unjudged) == {19020: (
        "a Ray worker process: Ray could not be asked who owns it ([h200] exit status 1)")}
    assert _by_pid(judged.zombies) == {18107: "its parent is gone (PPID 1), port 8000: nothing listens"}
    # Ray's output in a shape the parser does not know is such an error too (a ParseError), never a guess
    judged, _, _ = read_judgement(zombie(actors="======== Autoscaler status ========"), RULE, [8000])
    assert _by_pid(judged.unjudged)[19020].startswith("a Ray worker process: Ray could not be asked who owns it "
                                                      "(cannot parse ray actors JSON: not JSON")
    # a recording made before the Ray reads existed says so to its caller
    with pytest.raises(ReplayMiss):
        read_judgement(zombie(ray_error=ReplayMiss("no answer recorded for `ray list actors`")), RULE, [8000])


def test_a_worker_whose_actor_ray_lists_dead_is_unjudged():
    """workerkill-smoke/after: Ray lists the actor DEAD (its job SUCCEEDED); a process of that pid still holding
    the GPU (SYNTHESIZED: nodedown-smoke/after's rows, before the kill) is not told apart by Ray, so not judged."""
    rows = (f" 6752     1     170 {RAYLET.format(session='2026-12-02_05-12-38_784967_6103')}\n"
            " 8270  6752      98 ray::RayWorkerProc.run\n")
    facts = CapturedHost("/dev/nvidia0:        root       8270 F...m ray::RayWorkerP\n", rows,
                         f"8270, 43920, {UUID}, ray::RayWorkerProc.run\n", LISTEN_RAY, {}, WORKERKILL_ACTORS,
                         WORKERKILL_JOBS, NODEDOWN_NODES)
    judged, _, _ = read_judgement(facts, RULE, [8000])
    assert _by_pid(judged.unjudged) == {8270: "a Ray worker process: `ray list actors` lists no ALIVE actor with "
                                              "its pid"}


def test_holders_not_under_a_raylet_are_judged_as_before_and_ray_is_not_asked():
    """The rayzombie's engine core judged with and without Ray owners alike; a stack without a Ray worker never
    runs `ray list` (the ps rows of healthy-smoke/after without the worker)."""
    facts = zombie()
    rows = {r.pid: r for r in parse_ps_rows(ZOMBIE_PS)}
    holders = describe_holders(facts.gpu_holders(), rows, facts.gpu_apps(), ALLOWED, {}, [])
    with_ray = judge(holders, rows, [8000], facts.listening_ports(), {}, ray_owners=ray_owners(facts, holders, rows,
                                                                                                None))
    without = judge(holders[:1], rows, [8000], facts.listening_ports(), {})
    assert with_ray.zombies[0] == without.zombies[0] and with_ray.zombies[0][0].pid == 18107
    no_worker = healthy(fuser="\n".join(line for line in HEALTHY_FUSER.splitlines() if "3686" not in line))
    judged, _, _ = read_judgement(no_worker, RULE, [8000])
    assert no_worker.asked == [] and sorted(_by_pid(judged.attached)) == [2555, 2780]
    # a process under a raylet that no allowed name matches stays a stray (SYNTHESIZED: the real row of a pooled
    # `ray::IDLE` worker of rayzombie-smoke/after put in fuser's table; none held the GPU there)
    idle = CapturedHost("/dev/nvidia0:        root      18258 F.... ray::IDLE\n",
                        f"17531     1     130 {RAYLET.format(session=ZOMBIE_SESSION)}\n18258 17531      69 ray::IDLE\n",
                        "", LISTEN_RAY, {})
    judged, _, _ = read_judgement(idle, RULE, [8000])
    assert [h.pid for h in judged.strays] == [18258] and idle.asked == []


def test_a_ray_worker_is_not_called_a_zombie_when_the_declared_port_s_process_is_hidden():
    """SYNTHESIZED from healthy-smoke/after: port 8000 listens but fuser shows no process for it (checks run as a
    user who cannot see root's sockets). The API server and engine core are unjudged for that; the Ray worker,
    whose driver is under that same API server, was called a zombie (`serves no declared port`) before."""
    judged, _, _ = read_judgement(healthy(port_owners={8000: []}), RULE, [8000])
    assert judged.zombies == []
    why = _by_pid(judged.unjudged)
    assert sorted(why) == [2555, 2780, 3686]
    assert why[3686] == why[2555] == ("port 8000 listens but fuser cannot see its process (run the host checks as "
                                      "root or as the serving user)")


def test_a_second_undeclared_ray_server_s_worker_is_a_stray_server_with_its_gpu_memory():
    """SYNTHESIZED from healthy-smoke/after: the API server told `--port 8001` (no endpoint declares it) and holding
    it (0100007F:1F41), the declared 8000 closed. The API server and its engine core were already one stray server
    (issue 31.1); its Ray worker, which holds all the memory, was a zombie (`its driver ... serves no declared
    port`) and the server's line said `GPU memory not reported`."""
    facts = healthy(ps=HEALTHY_PS.replace(API, API.replace("--port 8000", "--port 8001")),
                    listening="0100007F:1F41 0\n" + LISTEN_RAY, port_owners={8001: [2555]})
    judged, _, _ = read_judgement(facts, RULE, [8000], [8000, 30000])
    assert judged.zombies == [] and judged.attached == []
    assert [(s.holder.pid, s.port, s.server_pid) for s in judged.servers] == [(2555, 8001, 2555), (2780, 8001, 2555),
                                                                              (3686, 8001, 2555)]
    assert judged.server_text() == [
        "a server on port 8001 that no endpoint declares: pid 2555 python3 -m vllm.entrypoints.openai.api_server "
        f"(with pid 2780 VLLM::EngineCore, pid 3686 ray::RayWorkerProc.run) holds 42.9 GiB (43920 MiB) on {UUID}"]
    # a driver on another node is not looked up among this host's pids (its pid is that node's)
    elsewhere = replace(facts, jobs=ray_job("2780", ip="127.0.1.2"))
    judged, _, _ = read_judgement(elsewhere, RULE, [8000], [8000, 30000])
    assert [h.pid for h, _ in judged.unjudged] == [3686] and 3686 not in [s.holder.pid for s in judged.servers]


@pytest.mark.parametrize(("title", "allowed", "matched"), [
    ("ray::RayWorkerProc.run", "ray::RayWorkerProc", True),  # the title of the H200's worker while it serves
    ("ray::RayWorkerProc", "ray::RayWorkerProc", True),  # the class alone, between methods
    ("ray::RayWorkerProcX", "ray::RayWorkerProc", False),  # another class that starts alike
    ("ray::RayWorkerProcX.run", "ray::RayWorkerProc", False),
    ("ray::IDLE", "ray::RayWorkerProc", False),  # Ray's pooled worker: 16 under the H200's head raylet
    ("ray::RayWorkerProc.run", "RayWorkerProc", False),  # the method rule is for `ray::` names only
])
def test_ray_process_titles_match_the_allowed_actor_class(title, allowed, matched):
    match = match_name("ray::RayWorkerP", title, [allowed])  # fuser's comm of the H200's worker
    assert (match is not None) == matched
    if title == "ray::RayWorkerProc.run" and matched:
        assert match.how == "its Ray process title `ray::RayWorkerProc.run` (actor `ray::RayWorkerProc` running `run`)"
