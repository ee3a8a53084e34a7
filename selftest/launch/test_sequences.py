"""The exact command sequences the kpro6 and Spark [launch] sections send, against stand-in hosts.

Stand-in hosts = `fakes.FakeHosts`: a recording, scripted fake Connection (no ssh/pct/docker) answering
with SYNTHESIZED output in the documented formats. The inventories are the committed ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llmval.core.errors import HostError, NotReady
from llmval.inventory import load_inventory
from llmval.launch import CrashLoop, Hung, PortInUse, Stack, TeardownError
from selftest.launch.fakes import TIMEOUT_RC, FakeClock, FakeHosts, ProbeAfter, never_open

ROOT = Path(__file__).resolve().parents[2]
KPRO6 = load_inventory(ROOT / "inventories" / "kpro6.toml")
SPARK = load_inventory(ROOT / "inventories" / "spark.toml")

SYSTEMD_SHOW = "systemctl show -p NRestarts -p ActiveState -p SubState -p ExecMainStatus sglang.service"
JOURNAL = "journalctl -u sglang.service -n 20 --no-pager -o cat --show-cursor"
GPU_QUERY = "nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits"
GPUS_BUSY = "0, 88000\n1, 88000\n2, 88000\n3, 88000\n"
GPUS_IDLE = "0, 2\n1, 2\n2, 2\n3, 2\n"
NCCL_LAST_LINE = "kpro6-ct129 NCCL INFO Channel 01/0 : 2[2] -> 3[3] via SHM/direct/direct"  # SYNTHESIZED


def _show(restarts: int, state: str = "activating", sub: str = "start") -> tuple[int, str]:
    return 0, f"NRestarts={restarts}\nActiveState={state}\nSubState={sub}\nExecMainStatus=0\n"


def _journal(*lines: str, cursor: str) -> tuple[int, str]:
    return 0, "\n".join(lines) + f"\n-- cursor: s=abc;i={cursor}\n"


def _stack(inventory, hosts: FakeHosts, tmp_path: Path, *, probe: ProbeAfter, destructive: bool = True,
           clock: FakeClock | None = None) -> Stack:
    clock = clock or FakeClock()
    return Stack(inventory, hosts.connection_to, tmp_path / "launch", allow_destructive=destructive,
                 say=lambda _: None, probe=probe, is_port_open=never_open, clock=clock, sleep=clock.sleep)


def _kpro6_hosts() -> FakeHosts:
    return (FakeHosts()
            .on("kpro6", r"systemctl is-active", (3, "inactive\n"))
            .on("kpro6-ct129", r"^systemctl show", _show(0))
            .on("kpro6-ct129", r"^journalctl", _journal("Loading safetensors", cursor="1"),
                _journal("Capture cuda graph begin", cursor="2"))
            .on("kpro6", r"^nvidia-smi", (0, GPUS_BUSY), (0, GPUS_IDLE)))


def test_kpro6_launch_and_teardown_send_exactly_this(tmp_path):
    hosts = _kpro6_hosts()
    stack = _stack(KPRO6, hosts, tmp_path, probe=ProbeAfter(3))
    stack.launch()
    stack.stop()
    assert hosts.sent == [
        ("kpro6", "pct exec 129 -- systemctl is-active sglang.service"),
        ("kpro6", "pct exec 129 -- systemctl start sglang.service"),
        ("kpro6-ct129", SYSTEMD_SHOW), ("kpro6-ct129", JOURNAL),
        ("kpro6-ct129", SYSTEMD_SHOW), ("kpro6-ct129", JOURNAL),
        ("kpro6", "pct exec 129 -- systemctl stop sglang.service"),
        ("kpro6", "pct exec 129 -- pkill -9 -e -f python3"),  # the zombie workers, killed from the host
        ("kpro6", "fuser -k /dev/nvidia*"),
        ("kpro6", GPU_QUERY), ("kpro6", GPU_QUERY),  # busy once, then idle
    ]
    assert stack.summary.teardown_problems == []


def test_kpro6_teardown_is_idempotent(tmp_path):
    hosts = _kpro6_hosts()
    stack = _stack(KPRO6, hosts, tmp_path, probe=ProbeAfter(1))
    stack.launch()
    stack.stop()
    sent = len(hosts.sent)
    stack.stop()
    assert len(hosts.sent) == sent


def test_kpro6_without_allow_destructive_skips_the_kills_and_says_why_gpus_stay_busy(tmp_path):
    hosts = _kpro6_hosts().on("kpro6", r"^nvidia-smi", (0, GPUS_BUSY))
    stack = _stack(KPRO6, hosts, tmp_path, probe=ProbeAfter(1), destructive=False)
    stack.launch()
    with pytest.raises(TeardownError) as caught:
        stack.stop()
    assert [c for c in hosts.commands("kpro6") if "pkill" in c or "fuser" in c] == []
    message = str(caught.value)
    assert "--allow-destructive" in message and "88000" in message and "<= 1024 MiB" in message
    assert stack.summary.skipped_destructive == [
        "stop: [kpro6] kill leftover python workers in CT 129 (zombies holding GPU memory)",
        "stop: [kpro6] free /dev/nvidia* on the host"]


def test_kpro6_crash_loop_is_reported_from_nrestarts_long_before_the_deadline(tmp_path):
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"  # SYNTHESIZED journal line
    hosts = (_kpro6_hosts()
             .on("kpro6-ct129", r"^systemctl show", _show(0), _show(1, "activating", "auto-restart"), _show(2))
             .on("kpro6-ct129", r"^journalctl", _journal("speculative_num_steps=5", oom, cursor="9")))
    clock = FakeClock()
    stack = _stack(KPRO6, hosts, tmp_path, probe=ProbeAfter(None), clock=clock)
    with pytest.raises(CrashLoop) as caught:
        stack.launch()
    message = str(caught.value)
    assert "restarted 2 times" in message and "counter 0 -> 2" in message
    assert f"engine error: {oom}" in message
    assert clock.now < 30 < KPRO6.launch.ready.timeout_s
    stack.stop()
    assert ("kpro6", "pct exec 129 -- systemctl stop sglang.service") in hosts.sent


def test_kpro6_silent_journal_is_a_hang_after_the_no_progress_window(tmp_path):
    hosts = _kpro6_hosts().on("kpro6-ct129", r"^journalctl", _journal(NCCL_LAST_LINE, cursor="7"))
    clock = FakeClock()
    stack = _stack(KPRO6, hosts, tmp_path, probe=ProbeAfter(None), clock=clock)
    with pytest.raises(Hung) as caught:
        stack.launch()
    window = KPRO6.launch.ready.no_progress_s
    assert window < clock.now <= window + 2 * KPRO6.launch.ready.interval_s
    assert NCCL_LAST_LINE in str(caught.value)


def test_kpro6_unit_already_active_starts_nothing_and_tears_nothing_down(tmp_path):
    hosts = _kpro6_hosts().on("kpro6", r"systemctl is-active", (0, "active\n"))
    stack = _stack(KPRO6, hosts, tmp_path, probe=ProbeAfter(1))
    with pytest.raises(HostError, match="is not already active"):
        stack.launch()
    stack.stop()
    assert hosts.sent == [("kpro6", "pct exec 129 -- systemctl is-active sglang.service")]


RAY_ONE_NODE = """======== Autoscaler status: 2026-02-24 08:04:03.547705 ========
Node status
---------------------------------------------------------------
Active:
 1 node_32769bb197cd085bf0cef7dbd30da9efb95b13a065da6b91a75f6e18
Pending:
 (no pending nodes)
"""
RAY_TWO_NODES = RAY_ONE_NODE.replace(
    "Pending:", " 1 node_7cae9434ee30d1fcb0aefdf27b18659ef9713160666974e5818e28a0\nPending:")
DOCKER_RUN = ("docker run -d --name vllm-qwen35 --gpus all --network host --ipc host "
              "-e NCCL_SOCKET_IFNAME=enp1s0f1np1 -e GLOO_SOCKET_IFNAME=enp1s0f1np1 "
              "-e RAY_memory_monitor_refresh_ms=0 -e NCCL_DEBUG=INFO "
              "-v /models:/models -v /var/log/llmval:/var/log/llmval "
              "--entrypoint sleep hellohal2064/vllm-qwen3.5-gb10 infinity")
CONTAINER_FREE = "test -z \"$(docker ps -aq --filter name=^vllm-qwen35$)\""
INSPECT = "docker inspect -f '{{.RestartCount}} {{.State.Status}} {{.State.ExitCode}}' vllm-qwen35"
DOCKER_LOGS = "docker logs -t --tail 20 vllm-qwen35"
SERVE_LOG = "stat -c %s /var/log/llmval/vllm-serve.log && tail -n 20 /var/log/llmval/vllm-serve.log"
WATCH_POLL = [("spark1", INSPECT), ("spark1", DOCKER_LOGS), ("spark2", INSPECT), ("spark2", DOCKER_LOGS),
              ("spark1", SERVE_LOG)]


def _spark_hosts() -> FakeHosts:
    return (FakeHosts()
            .on("spark1", r"ray status", (0, RAY_ONE_NODE), (0, RAY_TWO_NODES))
            .on("spark1", r"^docker inspect", (0, "0 running 0\n"))
            .on("spark2", r"^docker inspect", (0, "0 running 0\n"))
            .on("spark1", r"^stat -c", (0, "100\nLoading weights\n"), (0, "900\nCapturing CUDA graphs\n")))


def test_spark_launch_and_teardown_send_exactly_this(tmp_path):
    hosts = _spark_hosts()
    stack = _stack(SPARK, hosts, tmp_path, probe=ProbeAfter(2))
    stack.launch()
    stack.stop()
    assert hosts.sent == [
        ("spark1", CONTAINER_FREE),
        ("spark2", CONTAINER_FREE),
        ("spark1", DOCKER_RUN),
        ("spark2", DOCKER_RUN),
        ("spark1", "docker exec vllm-qwen35 ray start --head --node-ip-address 192.168.200.1 --port 6379"),
        ("spark2", "docker exec vllm-qwen35 ray start --address 192.168.200.1:6379 --node-ip-address 192.168.200.2"),
        ("spark1", "docker exec vllm-qwen35 ray status"),  # 1 node alive
        ("spark1", "docker exec vllm-qwen35 ray status"),  # 2 nodes alive
        ("spark1", "docker exec -d vllm-qwen35 sh -c 'vllm serve /models/Qwen3.5-122B-A10B-FP8 "
                   "--served-model-name Qwen3.5-122B-A10B-FP8 --host 0.0.0.0 --port 8000 --tensor-parallel-size 2 "
                   "--distributed-executor-backend ray > /var/log/llmval/vllm-serve.log 2>&1'"),
        *WATCH_POLL,
        # teardown, in reverse order
        ("spark1", "docker exec vllm-qwen35 pkill -f 'vllm serve'"),
        ("spark2", "docker exec vllm-qwen35 ray stop --force"),
        ("spark1", "docker exec vllm-qwen35 ray stop --force"),
        ("spark2", "docker rm -f vllm-qwen35"),
        ("spark1", "docker rm -f vllm-qwen35"),
    ]


def test_spark_every_ray_node_is_pinned_to_the_ib_subnet(tmp_path):
    hosts = _spark_hosts()
    _stack(SPARK, hosts, tmp_path, probe=ProbeAfter(1)).launch()
    ray_starts = [c for c in hosts.commands() if "ray start" in c]
    assert len(ray_starts) == 2
    assert all("--node-ip-address 192.168.200." in c for c in ray_starts)
    assert all("--address 192.168.200." in c for c in ray_starts if "--head" not in c)
    runs = [c for c in hosts.commands() if c.startswith("docker run")]
    for flag in ("NCCL_SOCKET_IFNAME=enp1s0f1np1", "GLOO_SOCKET_IFNAME=enp1s0f1np1", "RAY_memory_monitor_refresh_ms=0",
                 "NCCL_DEBUG=INFO"):
        assert all(flag in c for c in runs), flag


def test_spark_one_alive_ray_node_fails_the_wait_and_still_tears_down_in_reverse(tmp_path):
    hosts = _spark_hosts().on("spark1", r"ray status", (0, RAY_ONE_NODE))
    clock = FakeClock()
    stack = _stack(SPARK, hosts, tmp_path, probe=ProbeAfter(1), clock=clock)
    with pytest.raises(NotReady) as caught:
        stack.launch()
    assert "expected: >= 2 alive Ray nodes" in str(caught.value) and "observed: 1 alive Ray nodes" in str(caught.value)
    assert not any("vllm serve" in c and "-d" in c for c in hosts.commands())
    stack.stop()
    assert hosts.sent[-5:] == [
        ("spark1", "docker exec vllm-qwen35 pkill -f 'vllm serve'"),
        ("spark2", "docker exec vllm-qwen35 ray stop --force"),
        ("spark1", "docker exec vllm-qwen35 ray stop --force"),
        ("spark2", "docker rm -f vllm-qwen35"),
        ("spark1", "docker rm -f vllm-qwen35"),
    ]


def test_spark_ray_status_that_hangs_once_is_retried_within_the_wait(tmp_path):
    hosts = _spark_hosts().on("spark1", r"ray status", (TIMEOUT_RC, ""), (0, RAY_TWO_NODES))
    _stack(SPARK, hosts, tmp_path, probe=ProbeAfter(1)).launch()
    assert hosts.commands("spark1").count("docker exec vllm-qwen35 ray status") == 2


def test_spark_restarting_worker_container_is_a_crash_loop(tmp_path):
    hosts = _spark_hosts().on("spark2", r"^docker inspect", (0, "0 running 0\n"), (0, "1 restarting 137\n"),
                              (0, "2 restarting 137\n"))
    stack = _stack(SPARK, hosts, tmp_path, probe=ProbeAfter(None))
    with pytest.raises(CrashLoop, match=r"docker:vllm-qwen35@spark2 is crash-looping: restarted 2 times"):
        stack.launch()


def test_spark_foreign_server_on_the_port_is_refused_before_anything_runs(tmp_path):
    hosts = _spark_hosts()
    stack = Stack(SPARK, hosts.connection_to, tmp_path, say=lambda _: None, probe=ProbeAfter(1),
                  is_port_open=lambda host, port: (host, port) == ("10.1.230.180", 8000))
    with pytest.raises(PortInUse, match=r"10.1.230.180:8000 already accepts connections before launch"):
        stack.launch()
    stack.stop()
    assert hosts.sent == []
