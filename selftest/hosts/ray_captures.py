"""What the lent H200 showed of vLLM 0.24.0 under a live Ray 2.60 cluster, for the Ray-worker self-tests
(selftest/hosts/test_ray_workers.py, selftest/parsers/test_host_formats.py).

REAL: every fuser table, ps row, compute-app row, /proc/net/tcp row and `ray list` JSON here was read off the lent
H200 on 2026-12-02 by scripts/gpu/ray/scenario.sh (head raylet 127.0.1.1 with the GPU, a second raylet 127.0.1.2
without), quoted from its captures (`<run>/after/`, `<run>/before/` of healthy-smoke, rayzombie-smoke,
nodedown-smoke, workerkill-smoke) and checked equal to them when quoted. Two cuts, said where they are made: a
raylet's command line (about 6 kB) is quoted up to its first flag, and a job's `entrypoint` (`VLLM::EngineCore`
and 129 empty quoted words, the engine's argv under its process title) is written as that repeat.
"""

from __future__ import annotations

# [hosts.gpu_processes] allowed of inventories/h200-vllm-ray.toml, the inventory the captures were judged with
ALLOWED = ["ray::RayWorkerProc", "ray::RayWorkerWrapper", "VLLM::Worker", "VLLM::EngineCore",
           "python3 -m vllm.entrypoints.openai.api_server"]
UUID = "GPU-b51adf6a-b5e8-9ea9-9b78-7c2fbf9dbe4b"  # the lent H200's GPU
API = ("python3 -m vllm.entrypoints.openai.api_server --model /tmp/model --served-model-name smollm2 --host "
       "127.0.0.1 --port 8000 --dtype bfloat16 --max-model-len 8192 --gpu-memory-utilization 0.3 "
       "--enable-auto-tool-choice --tool-call-parser hermes --distributed-executor-backend ray --enforce-eager")
RAYLET = "/tmp/raysite/ray/core/src/ray/raylet/raylet --raylet_socket_name=/tmp/ray/session_{session}/sockets/raylet"
ENTRYPOINT = "VLLM::EngineCore" + ' \\"\\"' * 129  # as JSON writes it: `VLLM::EngineCore \"\" \"\" ...`
LISTEN_8000 = "0100007F:1F40 0\n"  # 127.0.0.1:8000, root: the API server's socket (tcp-listening.txt)
LISTEN_RAY = "0100007F:2049 0\n0101007F:CC8D 0\n0201007F:CC8D 0\n"  # the dashboard (8265), raylets' ports


def ray_job(pid: str, status: str = "RUNNING", ip: str = "127.0.1.1") -> str:
    """`ray list jobs --format json` as the H200 printed it for vLLM's engine core (the driver)."""
    return ('[{"type": "DRIVER", "job_id": "01000000", "submission_id": null, "driver_info": {"id": "01000000", '
            f'"node_ip_address": "{ip}", "pid": "{pid}"}}, "status": "{status}", "entrypoint": "{ENTRYPOINT}", '
            '"message": null, "error_type": null, "start_time": null, "end_time": null, "metadata": null, '
            '"runtime_env": null, "driver_agent_http_address": null, "driver_node_id": null, '
            '"driver_exit_code": null}]')


def ray_actor(actor_id: str, state: str, name: str, node_id: str, pid: int, namespace: str) -> str:
    """`ray list actors --format json --limit 10000`: vLLM 0.24's one worker actor (`RayWorkerProc`)."""
    return (f'[{{"actor_id": "{actor_id}", "class_name": "RayWorkerProc", "state": "{state}", "job_id": '
            f'"01000000", "name": "{name}", "node_id": "{node_id}", "pid": {pid}, "ray_namespace": "{namespace}", '
            '"serialized_runtime_env": null, "required_resources": null, "death_cause": null, "is_detached": null, '
            '"placement_group_id": null, "repr_name": null, "num_restarts": null, '
            '"num_restarts_due_to_lineage_reconstruction": null, "num_restarts_due_to_node_preemption": null, '
            '"call_site": null, "label_selector": null, "fallback_strategy": null}]')


# ---- healthy-smoke/after (05:06:09Z): the API server 2555 serves port 8000, its engine core 2780 is the job's
# driver, the Ray worker 3686 (a child of the head's raylet 1922) holds the GPU memory
HEALTHY_FUSER = """                     USER        PID ACCESS COMMAND
/dev/nvidia0:        root       2555 F.... python3
                     root       2780 F.... VLLM::EngineCor
                     root       3686 F...m ray::RayWorkerP
/dev/nvidiactl:      root       2555 F.... python3
                     root       2780 F.... VLLM::EngineCor
                     root       3686 F...m ray::RayWorkerP
/dev/nvidia-uvm:     root       2555 F.... python3
                     root       2780 F.... VLLM::EngineCor
                     root       3686 F...m ray::RayWorkerP
"""
HEALTHY_PS = (f" 1922     1     150 {RAYLET.format(session='2026-12-02_05-03-33_457927_1272')}\n"
              f" 2555     1     118 {API}\n"
              " 2780  2555      79 VLLM::EngineCore\n"
              " 3686  1922      57 ray::RayWorkerProc.run\n")
HEALTHY_APPS = f"3686, 43920, {UUID}, ray::RayWorkerProc.run\n"
HEALTHY_ACTORS = ray_actor("d52713b00a8a20a3923eaed801000000", "ALIVE", "vllm_Worker_1796187889652315019",
                        "3268412fd85485e659db8b5db4d53dc1518c84fa29c5edc5c7166a9c", 3686,
                        "8d66fac7-7d02-4e2c-9db0-2052272214fc")
HEALTHY_JOBS = ray_job("2780")
HEALTHY_NODES = (
    '[{"node_id": "3268412fd85485e659db8b5db4d53dc1518c84fa29c5edc5c7166a9c", "node_ip": "127.0.1.1", '
    '"is_head_node": true, "state": "ALIVE", "state_message": null, "node_name": "127.0.1.1", "resources_total": '
    '{"object_store_memory": "37.383 GiB", "CPU": 16.0, "memory": "87.228 GiB", "node:127.0.1.1": 1.0, "GPU": 1.0, '
    '"accelerator_type:H200": 1.0, "node:__internal_head__": 1.0}, "labels": {"ray.io/node-id": '
    '"3268412fd85485e659db8b5db4d53dc1518c84fa29c5edc5c7166a9c", "ray.io/accelerator-type": "H200"}, '
    '"start_time_ms": null, "end_time_ms": null}, '
    '{"node_id": "fd1d51bafcc0f892df59d21340209194aa1f21087fd8607121286354", '
    '"node_ip": "127.0.1.2", "is_head_node": false, "state": "ALIVE", "state_message": null, "node_name": "127.0.1.2", '
    '"resources_total": {"node:127.0.1.2": 1.0, "CPU": 2.0, "memory": "87.080 GiB", "object_store_memory": '
    '"37.320 GiB"}, "labels": {"ray.io/node-id": "fd1d51bafcc0f892df59d21340209194aa1f21087fd8607121286354"}, '
    '"start_time_ms": null, "end_time_ms": null}]')

# ---- rayzombie-smoke: the API server 17987 killed with `kill -9` at 05:25:44Z. before/ (05:25:32Z) the stack is
# whole; after/ (05:26:00Z) the engine core 18107 (the job's driver) has PPID 1, still holds /dev/nvidia*, and keeps
# the Ray actor 19020 `ray::RayWorkerProc.run` alive with 43920 MiB; nothing listens on 8000
ZOMBIE_FUSER_BEFORE = """                     USER        PID ACCESS COMMAND
/dev/nvidia0:        root      17987 F.... python3
                     root      18107 F.... VLLM::EngineCor
                     root      19020 F...m ray::RayWorkerP
/dev/nvidiactl:      root      17987 F.... python3
                     root      18107 F.... VLLM::EngineCor
                     root      19020 F...m ray::RayWorkerP
/dev/nvidia-uvm:     root      17987 F.... python3
                     root      18107 F.... VLLM::EngineCor
                     root      19020 F...m ray::RayWorkerP
"""
ZOMBIE_FUSER = """                     USER        PID ACCESS COMMAND
/dev/nvidia0:        root      18107 F.... VLLM::EngineCor
                     root      19020 F...m ray::RayWorkerP
/dev/nvidiactl:      root      18107 F.... VLLM::EngineCor
                     root      19020 F...m ray::RayWorkerP
/dev/nvidia-uvm:     root      18107 F.... VLLM::EngineCor
                     root      19020 F...m ray::RayWorkerP
"""
ZOMBIE_SESSION = "2026-12-02_05-23-45_126216_16884"
ZOMBIE_PS_BEFORE = (f"17531     1     102 {RAYLET.format(session=ZOMBIE_SESSION)}\n"
                    f"17987     1      84 {API}\n"
                    "18107 17987      63 VLLM::EngineCore\n"
                    "19020 17531      40 ray::RayWorkerProc.run\n")
ZOMBIE_PS = (f"17531     1     130 {RAYLET.format(session=ZOMBIE_SESSION)}\n"
             "18107     1      91 VLLM::EngineCore\n"
             "19020 17531      68 ray::RayWorkerProc.run\n")
ZOMBIE_APPS = f"19020, 43920, {UUID}, ray::RayWorkerProc.run\n"
ZOMBIE_ACTORS = ray_actor("47a536d606f0b0e62ff04c3b01000000", "ALIVE", "vllm_Worker_1796189067714839977",
                       "d545c911af813fbac5dd632495f536e9b25fbb3f2b8547e55393f657", 19020,
                       "e8da4e40-472d-4258-b3b2-f521cc8cc5f8")
ZOMBIE_JOBS = ray_job("18107")
ZOMBIE_NODES = (
    '[{"node_id": "878767290a7954d727fc97629e5cc422edd6714307d6a8da1f17dfa6", "node_ip": "127.0.1.2", '
    '"is_head_node": false, "state": "ALIVE", "state_message": null, "node_name": "127.0.1.2", "resources_total": '
    '{"memory": "87.068 GiB", "object_store_memory": "37.315 GiB", "CPU": 2.0, "node:127.0.1.2": 1.0}, "labels": '
    '{"ray.io/node-id": "878767290a7954d727fc97629e5cc422edd6714307d6a8da1f17dfa6"}, "start_time_ms": null, '
    '"end_time_ms": null}, {"node_id": "d545c911af813fbac5dd632495f536e9b25fbb3f2b8547e55393f657", "node_ip": '
    '"127.0.1.1", "is_head_node": true, "state": "ALIVE", "state_message": null, "node_name": "127.0.1.1", '
    '"resources_total": {"GPU": 1.0, "memory": "87.214 GiB", "node:127.0.1.1": 1.0, "object_store_memory": '
    '"37.377 GiB", "CPU": 16.0, "accelerator_type:H200": 1.0, "node:__internal_head__": 1.0}, "labels": '
    '{"ray.io/accelerator-type": "H200", "ray.io/node-id": '
    '"d545c911af813fbac5dd632495f536e9b25fbb3f2b8547e55393f657"}, '
    '"start_time_ms": null, "end_time_ms": null}]')


# ---- workerkill-smoke/after: the worker 8270 killed with `kill -9` at 05:16:48Z: Ray lists its actor DEAD and the
# driver's job SUCCEEDED (nodedown-smoke/after, 05:15:33Z, lists the same actor ALIVE)
WORKERKILL_ACTORS = ray_actor("def0d1ce5e35d9a61645470601000000", "DEAD", "vllm_Worker_1796188406765246686",
                           "16b402f4db6bd51e7b06014e6ae786cc6570079ce41ea34a7be638a2", 8270,
                           "a90d8fb4-ce88-4093-b056-5513e63ef814")
WORKERKILL_JOBS = ray_job("7350", status="SUCCEEDED")
NODEDOWN_NODES = (  # nodedown-smoke/after: the second raylet killed with `kill -9` at 05:15:04Z, DEAD 15 s later
    '[{"node_id": "16b402f4db6bd51e7b06014e6ae786cc6570079ce41ea34a7be638a2", "node_ip": "127.0.1.1", '
    '"is_head_node": true, "state": "ALIVE", "state_message": null, "node_name": "127.0.1.1", "resources_total": '
    '{"memory": "87.186 GiB", "accelerator_type:H200": 1.0, "node:127.0.1.1": 1.0, "node:__internal_head__": 1.0, '
    '"object_store_memory": "37.366 GiB", "CPU": 16.0, "GPU": 1.0}, "labels": {"ray.io/accelerator-type": "H200", '
    '"ray.io/node-id": "16b402f4db6bd51e7b06014e6ae786cc6570079ce41ea34a7be638a2"}, "start_time_ms": null, '
    '"end_time_ms": null}, {"node_id": "69fe9bdbf10d3889a54e6b102d2d10a308fc3a39b9dde79960376352", "node_ip": '
    '"127.0.1.2", "is_head_node": false, "state": "DEAD", "state_message": "Unexpected termination: health check '
    'failed due to missing too many heartbeats", "node_name": "127.0.1.2", "resources_total": {"CPU": 2.0, '
    '"object_store_memory": "37.308 GiB", "memory": "87.051 GiB", "node:127.0.1.2": 1.0}, "labels": '
    '{"ray.io/node-id": "69fe9bdbf10d3889a54e6b102d2d10a308fc3a39b9dde79960376352"}, "start_time_ms": null, '
    '"end_time_ms": null}]')
