"""One command vocabulary (issue 22.1): "nothing changes a host" holds by construction, not only over recordings.

`Connection.run` sends only a `Rendered` of a declared `Command` (host facts, engine-log reads, the readiness
watch); shell text goes only through `run_step`, the `--launch` path. A replay answers by family and arguments.
The inventory and the command arguments share one definition of each value shape."""

from __future__ import annotations

import ast
import json

import pydantic
import pytest

from llmval.core.errors import ReplayMiss, UnsafeArgument
from llmval.hostfacts import LXC_CONF, UNAME, log_command
from llmval.hostfacts.watch import WATCH_CONTAINER, WATCH_FILE, WATCH_UNIT
from llmval.inventory import HostSpec
from llmval.inventory.values import CONTAINER, PATH, PATTERN, UNIT, ContainerName, HostPath, ProcessPattern, UnitName
from llmval.io.command import COMMANDS, KINDS, Command, Rendered, command_key, is_declared
from llmval.io.recording import Replay
from llmval.io.transport import connect
from llmval.launch._watch import DockerWatch, FileWatch, SystemdWatch
from selftest.launch.fakes import FakeHosts
from selftest.strategies import ROOT

LOCAL = HostSpec(name="me", platform="p")


def test_connection_run_refuses_shell_text_and_undeclared_commands():
    connection = connect(LOCAL)
    assert connection.run(UNAME.render()).rc == 0
    for text in ("uname -a", "uname -a; reboot", str(UNAME.render()), UNAME.render() + " -r"):
        with pytest.raises(TypeError, match="declared Command"):
            connection.run(text)
    stray = Command("uname", "uname -a")  # same name and text as a declared family, but not on the allow-list
    with pytest.raises(TypeError, match="declared Command"):
        connection.run(stray.render())


def test_a_rendered_command_is_made_only_by_render_and_any_edit_is_plain_text():
    with pytest.raises(TypeError, match=r"only by Command\.render"):
        Rendered("rm -rf /", UNAME, {})
    rendered = LXC_CONF.render(id=129)
    assert is_declared(rendered) and rendered == "cat /etc/pve/lxc/129.conf"
    for edited in (rendered + "; reboot", rendered.replace("cat", "rm"), rendered[:], f"{rendered}",
                   json.loads(json.dumps(rendered))):
        assert not is_declared(edited), type(edited)
    import copy
    import pickle

    assert not is_declared(copy.deepcopy(rendered)) and not is_declared(pickle.loads(pickle.dumps(rendered)))


def test_launch_steps_have_their_own_explicit_path():
    assert connect(LOCAL).run_step("echo step; exit 3").stdout == "step\n"


def test_every_remote_watch_read_is_a_declared_command():
    """The `--wait-ready` / `--launch` watch once sent f-string shell text (`systemctl show ... {unit}`)."""
    hosts = FakeHosts()  # its run() refuses what Connection.run refuses
    for watch in (SystemdWatch("systemd:vllm.service@h", hosts.connection_to("h"), "vllm.service"),
                  DockerWatch("docker:vllm@h", hosts.connection_to("h"), "vllm"),
                  FileWatch("file:/var/log/v.log@h", hosts.connection_to("h"), "/var/log/v.log")):
        watch.observe()
    sent = hosts.commands("h")
    assert len(sent) == 5 and all(command_key(c) is not None for c in sent), sent
    assert sent[0] == WATCH_UNIT.render(unit="vllm.service")
    assert sent[2] == WATCH_CONTAINER.render(name="vllm")
    assert sent[4] == WATCH_FILE.render(path="/var/log/v.log")
    with pytest.raises(UnsafeArgument):
        SystemdWatch("systemd:x@h", hosts.connection_to("h"), "--host=evil").observe()


def test_no_source_module_builds_a_command_as_text_outside_the_declarations():
    """Every `.run(...)` / `.check_output(...)` / `host_probe(...)` in src/, fixtures/ and tests/ is given a
    rendered command, never a string literal or an f-string (launch steps use `run_step`)."""
    offenders = []
    for folder in ("src/llmval", "fixtures", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in {"run", "check_output"} and node.args
                        and isinstance(node.args[0], (ast.JoinedStr, ast.Constant, ast.BinOp))):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_replay_answers_by_family_and_arguments(tmp_path):
    record = {"host": "me", "rc": 0, "stdout": "lxc.cgroup2.devices.allow: c 195:* rwm\n", "stderr": "",
              "duration_s": 0.01, "timed_out": False}
    # quoted otherwise than render() quotes it: the same family with the same argument answers
    line = {**record, "command": "cat /etc/pve/lxc/'129'.conf"}
    (tmp_path / "commands-1.jsonl").write_text(json.dumps(line) + "\n")
    connection = connect(LOCAL, replay=Replay(tmp_path))
    assert connection.run(LXC_CONF.render(id=129)).stdout == record["stdout"]
    with pytest.raises(ReplayMiss):
        connection.run(LXC_CONF.render(id=130))
    with pytest.raises(ReplayMiss):
        connection.run(UNAME.render())


def test_every_committed_recording_keys_on_a_declared_family():
    recorded = [json.loads(line)["command"] for path in sorted((ROOT / "selftest" / "data").rglob("commands*.jsonl"))
                for line in path.read_text().splitlines() if line.strip()]
    assert recorded and [c for c in recorded if command_key(c) is None] == []


@pytest.mark.parametrize(("kind", "model"), [(UNIT, UnitName), (CONTAINER, ContainerName), (PATTERN, ProcessPattern),
                                             (PATH, HostPath)], ids=lambda k: getattr(k, "name", ""))
@pytest.mark.parametrize("value", ["sglang.service", "getty@tty1.service", "dev-disk\\x2dby.device", "vllm-qwen35",
                                   "/models/Qwen3.5 FP8", "[v]llm.entrypoints", "-delete", "--host=x", "x'y",
                                   "x;reboot", "$(reboot)", "a\nb", "x" * 300, "/a/`b`", " lead", "x\\y"])
def test_the_inventory_accepts_exactly_what_the_command_argument_accepts(kind, model, value):
    """One definition of each value shape: a unit with a backslash, say, is refused by both or by neither."""
    adapter = pydantic.TypeAdapter(model)
    try:
        adapter.validate_python(value)
        inventory_ok = True
    except pydantic.ValidationError:
        inventory_ok = False
    assert inventory_ok == (kind.problem(value) is None)


def test_every_kind_is_a_shared_shape_and_every_family_uses_only_them():
    assert all(kind in KINDS for family in COMMANDS.values() for kind in family.kinds.values())
    assert all(is_declared(family.example()) for family in COMMANDS.values())
    assert log_command("journal:vllm.service").family.name == "engine-log-journal"
