"""ip, systemd, docker, Ray, environ, file listings and fuser: live output of this machine where it can make
it (ip, environ, find, sha256sum, fuser), REAL H200 captures (fuser), documented shapes otherwise."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from llmval.core.errors import ParseError
from llmval.hostfacts import FILE_LIST, IP_ADDR, SHA256
from llmval.parsers.docker import image_matches, parse_docker_inspect
from llmval.parsers.env import parse_environ
from llmval.parsers.files import parse_find_listing, parse_sha256sum
from llmval.parsers.ip import parse_ip_addr
from llmval.parsers.procs import GpuHolder, parse_fuser_verbose
from llmval.parsers.ray import parse_ray_actors, parse_ray_jobs, parse_ray_nodes
from llmval.parsers.systemd import parse_systemctl_show
from selftest.hosts.ray_captures import (
    HEALTHY_NODES,
    NODEDOWN_NODES,
    WORKERKILL_ACTORS,
    WORKERKILL_JOBS,
    ZOMBIE_ACTORS,
    ZOMBIE_JOBS,
)
from selftest.strategies import ROOT

REAL = ROOT / "selftest" / "data" / "real" / "h200x2"


def sh(command: str) -> str:
    return subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30, check=True).stdout


def test_live_ip_addr_shows_loopback_up():
    links = parse_ip_addr(sh(IP_ADDR.render()))
    assert links["lo"].is_up and links["lo"].addresses_in("127.0.0.0/8") == ["127.0.0.1/8"]


def test_ip_addr_down_and_no_carrier_links():
    links = parse_ip_addr('[{"ifname":"a","operstate":"DOWN","flags":["UP","NO-CARRIER"],"addr_info":[]},{},'
                          '{"ifname":"b","operstate":"UP","flags":["UP"],"addr_info":[{"family":"inet",'
                          '"local":"192.168.200.2","prefixlen":24}]}]')
    assert not links["a"].is_up and links["b"].addresses_in("192.168.200.0/24") == ["192.168.200.2/24"]
    assert links["b"].addresses_in("10.0.0.0/8") == []


def test_ip_addr_not_json_is_a_parse_error():
    with pytest.raises(ParseError, match="ip -j addr"):
        parse_ip_addr("bash: line 1: ip: command not found")  # the H200 image's real stderr text


def test_systemctl_show_environment_quoting():
    unit = parse_systemctl_show('LoadState=loaded\nActiveState=failed\nUnitFileState=disabled\n'
                                'Environment=NCCL_P2P_DISABLE=1 "OPTS=--a --b" X=\n')
    assert not unit.is_active and not unit.is_enabled and unit.exists
    assert unit.environment == {"NCCL_P2P_DISABLE": "1", "OPTS": "--a --b", "X": ""}
    assert not parse_systemctl_show("LoadState=not-found\nActiveState=inactive\n").exists


def test_docker_inspect_and_image_matching():
    c = parse_docker_inspect('[{"Name":"/vllm-qwen35","State":{"Status":"exited","Running":false},'
                             '"Config":{"Image":"hellohal2064/vllm-qwen3.5-gb10:latest","Env":["A=1","B=x=y"]}}]')
    assert (c.name, c.is_running, c.env) == ("vllm-qwen35", False, {"A": "1", "B": "x=y"})
    assert image_matches("hellohal2064/vllm-qwen3.5-gb10", c.image)
    assert not image_matches("hellohal2064/vllm-qwen3.5-gb10:v2", c.image)
    assert not image_matches("other/vllm-qwen3.5-gb10", c.image)
    with pytest.raises(ParseError, match="one container"):
        parse_docker_inspect("[]")


def test_ray_state_api_and_ray_nodes_shapes():
    state = parse_ray_nodes('2026-11-30 03:00:00,000 INFO worker.py:1 -- Connecting\n[{"node_id":"a","node_ip":'
                            '"192.168.200.1","is_head_node":true,"state":"ALIVE","resources_total":{"GPU":1.0}},'
                            '{"node_id":"b","node_ip":"192.168.200.2","state":"DEAD","resources_total":{}}]')
    assert [(n.ip, n.is_alive, n.gpus) for n in state] == [("192.168.200.1", True, 1.0), ("192.168.200.2", False, 0.0)]
    legacy = parse_ray_nodes('[{"NodeID":"a","Alive":true,"NodeManagerAddress":"10.0.0.1","Resources":{"GPU":2}}]')
    assert legacy[0].gpus == 2.0 and legacy[0].is_alive
    rest = parse_ray_nodes('{"result":true,"data":{"result":{"result":[{"node_id":"a","state":"ALIVE"}]}}}')
    assert rest[0].is_alive
    with pytest.raises(ParseError):
        parse_ray_nodes("======== Autoscaler status ========")


# ---- Ray 2.60's State API as the lent H200 printed it (2026-12-02, scripts/gpu/ray/scenario.sh): the JSON quoted in
# selftest/hosts/test_ray_workers.py, which says where each was captured


def test_real_ray_nodes_keep_a_dead_node_and_why_ray_gave_it_up():
    """nodedown-smoke/after: the second raylet killed, listed DEAD with Ray's reason; the head's GPU counted."""
    head, second = parse_ray_nodes(NODEDOWN_NODES)
    assert (head.ip, head.is_head, head.is_alive, head.gpus, head.state_message) == ("127.0.1.1", True, True, 1.0, "")
    assert (second.ip, second.is_head, second.is_alive, second.gpus, second.state) == ("127.0.1.2", False, False, 0.0,
                                                                                      "DEAD")
    assert second.state_message == "Unexpected termination: health check failed due to missing too many heartbeats"
    assert second.node_id == "69fe9bdbf10d3889a54e6b102d2d10a308fc3a39b9dde79960376352"
    assert [(n.ip, n.is_alive) for n in parse_ray_nodes(HEALTHY_NODES)] == [("127.0.1.1", True), ("127.0.1.2", True)]


def test_real_ray_actors_and_jobs_give_the_worker_its_driver():
    [actor] = parse_ray_actors(ZOMBIE_ACTORS)  # rayzombie-smoke: the actor its orphaned driver keeps alive
    assert (actor.pid, actor.class_name, actor.name, actor.state, actor.job_id, actor.node_id) == (
        19020, "RayWorkerProc", "vllm_Worker_1796189067714839977", "ALIVE", "01000000",
        "d545c911af813fbac5dd632495f536e9b25fbb3f2b8547e55393f657")
    [job] = parse_ray_jobs(ZOMBIE_JOBS)  # `driver_info.pid` is a string in Ray's JSON
    assert (job.job_id, job.status, job.driver_pid, job.driver_ip) == ("01000000", "RUNNING", 18107, "127.0.1.1")
    [dead] = parse_ray_actors(WORKERKILL_ACTORS)  # workerkill-smoke: the worker killed, its job done
    assert (dead.pid, dead.state) == (8270, "DEAD")
    assert parse_ray_jobs(WORKERKILL_JOBS)[0].status == "SUCCEEDED"


def test_ray_s_empty_answer_is_an_empty_list():
    """REAL (healthy-cluster, before vLLM started): `ray list actors --format json` and `ray list jobs --format json`
    print `No resource in the cluster`, not `[]` (it was a ParseError, `not JSON`, before)."""
    assert parse_ray_actors("No resource in the cluster\n") == []
    assert parse_ray_jobs("No resource in the cluster\n") == []
    assert parse_ray_nodes("No resource in the cluster\n") == []


def test_ray_json_after_log_lines_and_in_the_dashboard_s_envelope():
    """SYNTHESIZED wrappers around the REAL JSON: a log line in Ray's format (its `ray start` log on the H200:
    `2026-12-02 05:03:33,456\tINFO usage_lib.py:448 -- Usage stats collection is disabled.`) printed before it,
    and the envelope of the dashboard's REST answer as the parser unwraps it (`{"data": {"result": {"result":
    [...]}}}`)."""
    log = "2026-12-02 05:03:33,456\tINFO usage_lib.py:448 -- Usage stats collection is disabled.\n"
    assert parse_ray_actors(log + ZOMBIE_ACTORS) == parse_ray_actors(ZOMBIE_ACTORS)
    assert parse_ray_jobs(log + ZOMBIE_JOBS)[0].driver_pid == 18107
    assert parse_ray_nodes(log + NODEDOWN_NODES)[1].state_message.startswith("Unexpected termination")
    envelope = '{"result": true, "data": {"result": {"result": %s}}}'
    assert parse_ray_actors(envelope % ZOMBIE_ACTORS)[0].pid == 19020
    assert parse_ray_jobs(envelope % ZOMBIE_JOBS)[0].driver_ip == "127.0.1.1"
    assert not parse_ray_nodes(envelope % NODEDOWN_NODES)[1].is_alive


@pytest.mark.parametrize(("text", "reason"), [
    ("======== Autoscaler status: 2026-12-02 05:04:10.041390 ========\nNode status\n", "not JSON"),  # `ray status`
    ('[{"actor_id": "47a536d606f0b0e62ff04c3b01000000", "class_name": "RayWorkerProc"', "not JSON"),  # cut short
    (ZOMBIE_ACTORS[1:-1], "expected a list of"),  # one entry, not in a list
    ('["RayWorkerProc"]', "expected a list of"),  # a list, but not of objects
])
def test_malformed_ray_output_is_a_parse_error_that_says_what_and_why(text, reason):
    for parse, what in ((parse_ray_actors, "actors"), (parse_ray_jobs, "jobs")):
        with pytest.raises(ParseError, match=f"cannot parse ray {what} JSON: {reason}") as error:
            parse(text)
        assert error.value.excerpt == text[:200]


def test_live_environ_of_this_process():
    with open(f"/proc/{os.getpid()}/environ", encoding="utf-8", errors="replace") as environ:
        env = parse_environ(environ.read())
    assert env.get("PATH") == os.environ.get("PATH")


def test_live_find_and_sha256sum_roundtrip(tmp_path):
    (tmp_path / "m").mkdir()
    files = {"m/config.json": b"{}", "m/a b.safetensors": b"x" * 1000, "m/sub/tok.json": b"t"}
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    listing = parse_find_listing(sh(FILE_LIST.render(path=str(tmp_path / "m"))))
    assert {p: s for p, (s, _) in listing.items()} == {str(tmp_path / r): len(d) for r, d in files.items()}
    sums = parse_sha256sum(sh(SHA256.render(paths=sorted(listing))))
    assert sums == {str(tmp_path / r): hashlib.sha256(d).hexdigest() for r, d in files.items()}


def test_real_fuser_capture_names_the_holder():
    holders = parse_fuser_verbose((REAL / "fuser-v-dev-nvidia.txt").read_text())
    assert [(h.pid, h.command) for h in holders] == [(713, "python3")]


@pytest.mark.subprocess
def test_live_fuser_on_a_held_file(tmp_path):
    held = tmp_path / "dev-nvidia0"
    held.write_text("")
    holder = subprocess.Popen([sys.executable, "-c", f"f=open({str(held)!r}); import time; time.sleep(30)"])
    try:
        for _ in range(100):  # bounded: until the child has the file open
            out = subprocess.run(f"fuser -v {held} 2>&1", shell=True, capture_output=True, text=True).stdout
            if str(holder.pid) in out:
                break
        assert holder.pid in [h.pid for h in parse_fuser_verbose(out)]
    finally:
        holder.kill()
        holder.wait()


def test_gpu_holder_unit_from_its_cgroup():
    assert GpuHolder(2211, "python3", "0::/system.slice/sglang.service").unit == "sglang.service"
    assert GpuHolder(9, "python3", "0::/system.slice/docker-ab12.scope").unit == "docker-ab12.scope"
    assert GpuHolder(77, "sleep", "0::/user.slice/user-0.slice/session-3.scope/x").unit == "session-3.scope"
    assert GpuHolder(78, "sleep", "0::/").unit is None
