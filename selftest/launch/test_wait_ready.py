"""`--wait-ready`: bounded waiting for hosts and endpoints in attach mode (llmval.launch.wait_all_ready), and the
plugin's one verdict per target that never became ready, the rest could-not-check at once (fixtures/ready.py)."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from llmval.core.errors import HostError
from llmval.launch import Observation, ReadyTarget, Watch, endpoint_probe, wait_all_ready
from selftest.contract import run_contract
from selftest.engines.test_issue44_logs import PLACEMENT

pytest_plugins = ["pytester"]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class TailWatch(Watch):
    source = "file:/var/log/engine.log"

    def observe(self) -> Observation:
        return Observation(progress="1", tail="INFO loading weights\nERROR CUDA out of memory\n"
                           "FutureWarning: Tip: ... turn off this error message\n")


def test_targets_ready_at_different_times_and_one_never():
    clock = FakeClock()
    said: list[str] = []

    def ready_after(seconds: float):
        return lambda: None if clock.now >= seconds else f"GET /health: HTTP 503 at {clock.now:g}"

    def host_down():
        raise HostError("kpro6", "uname -a", "ssh: connect to host kpro6 port 22: No route to host")

    targets = [ReadyTarget("fast", "endpoint", 60, ready_after(0)),
               ReadyTarget("slow", "endpoint", 60, ready_after(12)),
               ReadyTarget("never", "endpoint", 20, ready_after(1e9), watch=TailWatch()),
               ReadyTarget("kpro6", "host", 15, host_down)]
    outcome = wait_all_ready(targets, say=said.append, clock=clock, sleep=clock.sleep, interval_s=1)
    assert outcome["fast"].ready and outcome["fast"].waited_s == 0
    assert outcome["slow"].ready and outcome["slow"].waited_s == 12
    never = outcome["never"]
    assert not never.ready and 20 <= never.waited_s < 21 and never.last_reason.startswith("GET /health: HTTP 503")
    verdict = never.verdict()
    assert "not ready after 20 s" in verdict and "engine error: ERROR CUDA out of memory" in verdict
    assert "| INFO loading weights" in verdict
    assert not outcome["kpro6"].ready and "No route to host" in outcome["kpro6"].last_reason
    progress = [line for line in said if "waiting for" in line]
    assert progress and all("s / " in line for line in progress)
    assert any("log: FutureWarning" in line for line in progress if "never" in line)  # the log's last line shown
    assert clock.now <= 21  # returns at the latest deadline (plus one round), no later


class PlacementWatch(Watch):
    """vLLM under Ray waiting for its placement group (SYNTHESIZED in ray_utils.py's wording,
    selftest/engines/test_issue44_logs.py `PLACEMENT`): INFO and WARNING lines only, never an error line."""

    source = "file:/var/log/llmval/vllm-serve.log"

    def observe(self) -> Observation:
        return Observation(progress="1", tail="\n".join(PLACEMENT) + "\n")


def test_an_engine_waiting_for_its_placement_group_is_named_in_the_not_ready_verdict():
    """Issue 44.7 on the --wait-ready / --launch path: the log tail holds no error line, so the verdict named no
    cause before; now the placement-group wait is named first."""
    clock = FakeClock()
    outcome = wait_all_ready([ReadyTarget("spark-vllm", "endpoint", 5, lambda: "GET /health: connection refused",
                                          watch=PlacementWatch())], say=lambda _: None, clock=clock,
                             sleep=clock.sleep, interval_s=1)
    verdict = outcome["spark-vllm"].verdict()
    assert "\n  it waits for GPUs Ray does not give (its placement group): (EngineCore_DP0 pid=742) INFO 12-06 " \
           "11:11:59 [ray_utils.py:212] Waiting for creating a placement group of specs for 10 seconds." in verdict
    assert "engine error:" not in verdict


class UnreadableWatch(Watch):
    source = "journal:sglang.service"

    def observe(self) -> Observation:
        raise HostError("kpro6-ct129", "journalctl -u sglang",
                        "ssh: connect to host 127.0.0.1 port 1: Connection refused")


def test_a_refused_endpoint_says_nothing_listens_and_a_failed_log_read_is_not_the_engines_error():
    """Issue 43.1 tried as an ops engineer would (kpro6 with no host reachable): the hint said "read the log tail
    below" where none was read, and the failed read's own words were quoted as "engine error:"."""
    clock = FakeClock()
    refused = "GET /health: ConnectError: [Errno 111] Connection refused"
    targets = [ReadyTarget("down", "endpoint", 5, lambda: refused, watch=UnreadableWatch()),
               ReadyTarget("loading", "endpoint", 5, lambda: "GET /health: HTTP 503", watch=TailWatch())]
    outcome = wait_all_ready(targets, say=lambda _: None, clock=clock, sleep=clock.sleep, interval_s=1)
    down, loading = outcome["down"], outcome["loading"]
    assert not down.log_readable and "engine error" not in down.verdict() and "last log lines" not in down.verdict()
    assert "log (journal:sglang.service): (cannot read the log: " in down.verdict()
    assert down.endpoint_hint().startswith("nothing listens on the endpoint's port: the engine is not running")
    assert "log tail below" not in down.endpoint_hint()
    assert loading.endpoint_hint().startswith("the engine is still loading") and "log tail below" in \
        loading.endpoint_hint() and "engine error: ERROR CUDA out of memory" in loading.verdict()


def test_endpoint_probe_needs_health_and_the_model_listed():
    state = {"health": 503, "models": []}

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health":
            return httpx.Response(state["health"])
        return httpx.Response(200, json={"data": [{"id": m} for m in state["models"]]})

    probe = endpoint_probe(httpx.Client(base_url="http://e.test", transport=httpx.MockTransport(handle)), "smollm2",
                           timeout_s=1)
    assert probe() == "GET /health: HTTP 503"
    state["health"] = 200
    assert "lists [], not 'smollm2'" in probe()
    state["models"] = ["smollm2"]
    assert probe() is None


class _NeverReady(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


INVENTORY = """[deployment]
name = "wait-ready-never"
kind = "lab"

[[hosts]]
name = "localhost"
platform = "local"
transport = {{ kind = "local" }}

[[endpoints]]
name = "never-ready"
platform = "local"
base_url = "http://127.0.0.1:{port}"
engine = "vllm"
model = "smollm2"
host = "localhost"
logs = "file:{log}"
wait_ready_s = 600

[endpoints.expect]
kv_cache_dtype = "bfloat16"
tool_call_parser = "hermes"
"""


def test_a_server_that_never_becomes_ready_gets_one_verdict_at_the_deadline(pytester):
    """A live server answering 503 forever; `--wait-ready=3` overrides the inventory's 600 s: one `serving.ready`
    failure naming the deadline with the log tail, every other check of it could-not-check, within seconds."""
    log = pytester.path / "engine.log"
    log.write_text("INFO 11-30 [model.py:1] Loading weights took 48.10 seconds\n"
                   "ERROR 11-30 [core.py:700] ValueError: not enough KV cache blocks\n")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NeverReady)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    inventory = pytester.path / "never.toml"
    inventory.write_text(INVENTORY.format(port=server.server_address[1], log=log))
    try:
        result = run_contract(pytester, "-m", "smoke and serving", "-p", "no:xdist", f"--inventory={inventory}",
                              "--wait-ready=3")
    finally:
        server.shutdown()
    out = result.stdout.str()
    assert "[wait-ready] waiting for 2 target(s): host localhost (<= 3 s), endpoint never-ready (<= 3 s)" in out
    assert "NOT ready after 3 s: GET /health: HTTP 503" in out
    tests = json.loads((pytester.path / "reports" / "results.json").read_text())["tests"]
    outcomes = {t["nodeid"].split("::")[-1]: (t["outcome"], t["message"]) for t in tests}
    verdict = outcomes.pop("test_endpoint_ready_within_wait[never-ready]")
    assert verdict[0] == "failed" and "not ready after 3 s" in verdict[1], verdict
    assert "not enough KV cache blocks" in verdict[1]
    assert len(outcomes) >= 10
    for name, (outcome, message) in outcomes.items():
        if outcome == "skipped":
            assert "no endpoint in the inventory declares" in message, (name, message)
            continue  # not declared: skipped at collection, before any waiting
        assert outcome == "error" and "could not check (NotReady)" in message, (name, outcome, message)
    session_s = float(re.findall(r" in ([0-9.]+)s", out)[-1])
    assert session_s < 20, session_s
