"""What a recording may hold, and when it may be written (issue 32.1, 32.6).

Recordings are committed to the owners' repo and replayed in CI: the most shared file the suite writes. Before,
the serving process's whole environment was recorded (`/proc/PID/environ`, a unit's Environment=, a container's
Config.Env), redacted only where a name ended in API_KEY/TOKEN/SECRET/PASSWORD: AWS_SECRET_ACCESS_KEY's,
SECRET_KEY's and AZURE_OPENAI_KEY's values and DATABASE_URL's password stayed. A forbidden variable's value was
printed in every report. Two runs started together with one new --record folder both wrote into it; a full disk
left a half-written line and three checks FAILED for the suite's own OSError.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from llmval.core.errors import RecordingError
from llmval.hostfacts.env import PROCESS_ENVIRON
from llmval.hostfacts.services import CONTAINER_INSPECT, UNIT_SHOW
from llmval.io.recording import CommandResult, Recorder
from selftest.strategies import ROOT

SECRETS = {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
           "SECRET_KEY": "django-insecure-9f8e7d6c5b4a",
           "AZURE_OPENAI_KEY": "0123456789abcdef0123456789abcdef", "FORBIDDEN_TOKEN_X": "hunter2-is-set-here"}
SERVING = {**SECRETS, "DATABASE_URL": "postgresql://:pw-Secret9@db:5432/app", "NCCL_P2P_DISABLE": "1",
           "PATH": "/usr/bin"}
KEPT, HIDDEN = frozenset({"NCCL_P2P_DISABLE", "FORBIDDEN_TOKEN_X", "DATABASE_URL"}), frozenset({"FORBIDDEN_TOKEN_X"})


def _recorded(tmp_path, command: str, stdout: str) -> str:
    recorder = Recorder(tmp_path, env_kept=KEPT, env_hidden=HIDDEN)
    recorder.command(CommandResult(host="h", command=command, rc=0, stdout=stdout, stderr=""))
    [line] = (tmp_path / f"commands-{os.getpid()}.jsonl").read_text().splitlines()
    return json.loads(line)["stdout"]


@pytest.mark.parametrize("form", ["proc-environ", "systemd-unit", "docker-container"])
def test_a_recorded_environment_keeps_only_the_declared_variables_and_no_forbidden_value(tmp_path, form):
    if form == "proc-environ":
        command, stdout = str(PROCESS_ENVIRON.render(pid=123)), "".join(f"{k}={v}\n" for k, v in SERVING.items())
    elif form == "systemd-unit":
        command = str(UNIT_SHOW.render(unit="vllm.service"))
        stdout = "LoadState=loaded\nActiveState=active\nEnvironment=" + " ".join(f"{k}={v}" for k, v in
                                                                                 SERVING.items()) + "\n"
    else:
        command = str(CONTAINER_INSPECT.render(name="vllm"))
        env = [f"{k}={v}" for k, v in SERVING.items()]
        stdout = json.dumps([{"Name": "/vllm", "State": {"Running": True},
                              "Config": {"Image": "vllm/vllm-openai", "Env": env}}])
    kept = _recorded(tmp_path, command, stdout)
    for value in [*SECRETS.values(), "pw-Secret9", "/usr/bin"]:
        assert value not in kept, (value, kept)
    assert "NCCL_P2P_DISABLE=1" in kept and "FORBIDDEN_TOKEN_X=***" in kept, kept  # what the checks read replays
    assert "postgresql://***@db:5432/app" in kept, kept


def test_a_forbidden_variable_that_is_set_is_said_set_never_its_value():
    from llmval.hostfacts import Environment

    source = (ROOT / "tests" / "hosts" / "test_env.py").read_text()
    said: list[dict] = []

    class Host:
        name = "h"

        class env:
            source = "process:vllm"

    class Param:
        host, item, check = Host, ("FORBIDDEN_TOKEN_X", None), "hosts.env.forbidden_token_x"

    namespace: dict = {}
    exec(compile(source, "tests/hosts/test_env.py", "exec"), namespace)  # the check itself, not a copy of it
    namespace["test_serving_env_as_required"](
        Param, lambda host: type("F", (), {"environment": lambda self, s: Environment(SERVING, "pid 123")})(),
        lambda *args, **kwargs: said.append(kwargs),
        type("Settings", (), {"inventory": type("Inventory", (), {"endpoints": []})})())
    [verdict] = said
    assert verdict["ok"] is False and verdict["observed"] == f"set ({len(SECRETS['FORBIDDEN_TOKEN_X'])} characters)"
    assert SECRETS["FORBIDDEN_TOKEN_X"] not in repr(verdict)


def test_two_runs_with_one_new_record_folder_the_second_is_refused(tmp_path):
    from llmval.io.recording import CLAIM_FILE, claim_recording

    folder, outcomes = tmp_path / "rec", []
    barrier = threading.Barrier(8)

    def claim() -> None:
        barrier.wait()
        try:
            claim_recording(folder)
            outcomes.append("claimed")
        except RecordingError as error:
            outcomes.append(str(error))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("claimed") == 1, outcomes
    assert all("another run records into this folder" in o for o in outcomes if o != "claimed"), outcomes
    assert (folder / CLAIM_FILE).read_text() == f"pid {os.getpid()}\n"


def test_a_full_disk_stops_the_recording_with_no_partial_line_and_no_exception(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    recorder = Recorder(tmp_path, env_kept=KEPT)
    recorder.command(CommandResult(host="h", command="uname -a", rc=0, stdout="Linux\n", stderr=""))
    full = tmp_path / f"http-{os.getpid()}.jsonl"
    full.symlink_to("/dev/full")  # O_NOFOLLOW refuses the link: the same path a full disk takes, without a disk
    recorder.command(CommandResult(host="h", command="uname -r", rc=0, stdout="6.8\n", stderr=""))
    assert recorder.failed == "", "commands still go to their own file"
    from llmval.io.recording import HttpExchange

    recorder.http(HttpExchange(method="GET", url="http://x/health", request_body_sha256="", request_body="",
                               status=200, headers=[], body_b64=""))
    assert recorder.failed.startswith(f"--record {tmp_path}: cannot write http-"), recorder.failed
    lines = (tmp_path / f"commands-{os.getpid()}.jsonl").read_text().splitlines()
    assert [json.loads(line)["command"] for line in lines] == ["uname -a", "uname -r"]
    recorder.command(CommandResult(host="h", command="uname -m", rc=0, stdout="x86_64\n", stderr=""))
    assert len((tmp_path / f"commands-{os.getpid()}.jsonl").read_text().splitlines()) == 2  # stopped after it


def _can_mount(tmp_path) -> bool:
    probe = tmp_path / "probe"
    probe.mkdir()
    return subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                          capture_output=True).returncode == 0


def test_record_on_a_full_filesystem_exits_4_naming_the_folder_and_blames_no_check(tmp_path):
    from selftest.hostile.harness import write_inventory
    from selftest.hostile.server import HostileServer

    if not _can_mount(tmp_path):
        pytest.skip("no private mount namespace here (unshare -m needs root or CAP_SYS_ADMIN)")
    rec = tmp_path / "rec"
    rec.mkdir()
    with HostileServer() as server:
        inventory = write_inventory(tmp_path, server.base_url)
        pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir",
                      str(ROOT), "-c", str(ROOT / "pyproject.toml"), str(ROOT / "tests" / "serving"), "-m", "smoke",
                      "--inventory", str(inventory), "--reports", str(tmp_path / "reports"), "--record", str(rec)]
        script = (f"mount -t tmpfs -o size=64k tmpfs {rec} && python3 -c \"open('{rec}/x','wb').write(b'')\" && "
                  f"(dd if=/dev/zero of={rec}/filler bs=1k count=60 2>/dev/null; true) && "
                  f"{' '.join(pytest_cmd)}; rc=$?; cat {rec}/http-*.jsonl > {tmp_path}/lines.txt 2>/dev/null; "
                  "exit $rc")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LLMVAL_"))}
        run = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=180)
    out = run.stdout + run.stderr
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    assert run.returncode == 4, out[-3000:]
    assert f"--record {rec}" in out and "No space left on device" in out, out[-3000:]
    results = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert {t["outcome"] for t in results["tests"]} <= {"passed", "skipped"}, results["tests"]  # no check blamed
    for line in (tmp_path / "lines.txt").read_text().splitlines() if (tmp_path / "lines.txt").exists() else []:
        json.loads(line)  # every line kept is whole
