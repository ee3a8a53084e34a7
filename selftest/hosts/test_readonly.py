"""Nothing a smoke or nightly run sends changes a host: every command has the argv shape of one declared
read-only command family (`llmval.hostfacts`: host facts and engine-log reads), checked on every command of
every committed recording, and proved by mutation: a writing option added anywhere to any declared command
is refused."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from llmval.hostfacts import (
    CONTAINER_INSPECT,
    FACTS,
    FILE_LIST,
    NCCL_FILE,
    READ_ONLY,
    UNAME,
    UnsafeArgument,
    fact,
    family_of,
    is_read_only,
)
from llmval.inventory import HostSpec, ModelFileSpec
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]

CONTRACT = ROOT / "tests" / "hosts"
RECORDINGS = ROOT / "selftest" / "data"

WRITING = ["-delete", "; pct set 129 --delete mp0", "--privileged", "-oProxyCommand=sh", "--host=evil.example",
           "&& reboot", "| sh", "$(reboot)", "`reboot`", "-exec rm {} +", "> /etc/motd", "-fprintf /etc/x y"]
"""Writing (or host-switching) options and shell tails an attacker or a typo could add."""
HOSTILE_VALUES = ["-delete", "--privileged", "-oProxyCommand=sh", "--host=evil.example", "x; reboot", "$(reboot)",
                  "x'y", "a\nb", ""]


def _recorded_commands() -> list[str]:
    return [json.loads(line)["command"] for path in sorted(RECORDINGS.rglob("commands*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def test_every_recorded_command_is_one_declared_family_rendered_exactly():
    commands = _recorded_commands()
    assert len(commands) > 100
    assert [c for c in commands if not is_read_only(c)] == []
    for command in set(commands):
        family = family_of(command)
        assert family is not None
        assert family.render(**family.match(command)) == command, f"{family.name} no longer renders {command!r}"


def test_every_declared_command_is_used_by_some_recording_or_live_self_test():
    used = {family_of(c).name for c in _recorded_commands()}
    # exercised by the stand-in live runs (test_live.py), the local inventory's live runs and test_env.py instead
    # the readiness watch's reads are never recorded (waiting is not evidence): selftest/launch and
    # test_command_path.py send them (the zombie reads of issue 21.2 are in the REAL-h200-vllm-0.24.0-* recordings);
    # the kernel-gpu reads (issue 21.5, and the kernel-gpu-events reads of issue 31.8) by test_gpu_health.py's live
    # runs over fake journalctl/dmesg (recordings made before them are answered by the reads they superseded), as are
    # the kernel-gpu-gsp reads of issue 44.9; the
    # engine-log error reads (issue 31.2) by test_dead_engine.py (live on a file, and replayed: no committed recording
    # was made after them yet)
    watch = {"watch-unit", "watch-journal", "watch-container", "watch-container-logs", "watch-file"}
    errors = {f"engine-log-{kind}-errors" for kind in ("file", "journal", "docker", "launch")}
    # the Ray owner reads in a container (issue 36): the REAL-h200-vllm-ray-* recordings ran Ray on the host, so
    # `docker exec <name> ray list actors|jobs` is in no recording yet
    ray = {"ray-actors-docker", "ray-jobs-docker"}
    # `ray status` on the host (issue 44.7): the Spark replays run Ray in the container (ray-status-docker)
    ray |= {"ray-status"}
    # `nvidia-smi -q` (issue 44.9), read only where `-q -x` fails: test_gpu_health.py's replay of that case
    ray |= {"smi-q-text"}
    assert {c.name for c in READ_ONLY} - used <= {"nccl-docker", "process-matches", "process-environ",
                                                   "engine-log-file", "engine-log-docker", "kernel-gpu-journal",
                                                   "kernel-gpu-dmesg", "kernel-gpu-events-journal",
                                                   "kernel-gpu-events-dmesg", "kernel-gpu-gsp-journal",
                                                   "kernel-gpu-gsp-dmesg", *watch, *errors, *ray}


def test_every_fact_declares_its_commands_and_section():
    for declared in FACTS.values():
        assert declared.commands and declared.section, declared.name
        assert all(c in READ_ONLY for c in declared.commands), declared.name


def test_a_fact_judges_only_fields_of_its_section_with_host_check_ids():
    """What a declaration says it is evidence for is checked when it is declared (nothing is registered then)."""
    with pytest.raises(ValueError, match="outside the fact's section 'gpus'"):
        fact(UNAME, section="gpus", judges={"nccl.forbid": "hosts.nccl.transport"})
    with pytest.raises(ValueError, match="check ids must be"):
        fact(UNAME, section="gpus.p2p", checks="gpu.p2p")
    assert FACTS["p2p_read"].judges == {"gpus.p2p": ("hosts.gpu.p2p",)}


def test_the_reported_exploit_is_refused_at_render_and_at_check():
    """`model_files.path = "-delete"` once sent `find -L -delete -type f -printf ...` (issue 12)."""
    with pytest.raises(UnsafeArgument, match="starts with '-'"):
        FILE_LIST.render(path="-delete")
    assert not is_read_only("find -L -delete -type f -printf '%s %T@ %p\\n'")
    assert not is_read_only("find -L '-delete' -type f -printf '%s %T@ %p\\n'")


def test_a_bad_value_that_got_through_the_inventory_never_reaches_the_host(tmp_path):
    from llmval.hostfacts import HostFacts
    from llmval.io.transport import connect

    spec = ModelFileSpec.model_construct(path="-delete", hash_timeout_s=10)  # as if validation had missed it
    facts = HostFacts(connect(HostSpec(name="me", platform="p"), recorder=None))
    (tmp_path / "canary").write_text("x")
    with pytest.raises(UnsafeArgument):
        facts.file_listing(spec.path)
    assert (tmp_path / "canary").exists()


@pytest.mark.parametrize("family", READ_ONLY, ids=lambda c: c.name)
def test_adding_a_writing_option_anywhere_is_refused(family):
    command = family.example()
    assert is_read_only(command), command
    cuts = [i for i, ch in enumerate(command) if ch == " "] + [len(command)]
    mutants = [f"{command[:i]} {bad}{command[i:]}" for i in cuts for bad in WRITING]
    mutants += [f"{bad} {command}" for bad in WRITING]
    accepted = [m for m in mutants if is_read_only(m)]
    assert accepted == [], f"{family.name}: accepted {accepted[:3]}"


@pytest.mark.parametrize("family", [c for c in READ_ONLY if c.kinds], ids=lambda c: c.name)
def test_option_shaped_or_odd_values_are_refused_in_every_argument(family):
    for key in (k for k in family.kinds if k not in family.derive):
        for bad in HOSTILE_VALUES:
            args = {k: ([v.example] if f.endswith("*") else v.example)
                    for f in family.fields for k, v in [(f.rstrip("*~"), family.kinds[f.rstrip("*~")])]}
            args[key] = [bad] if isinstance(args[key], list) else bad
            with pytest.raises(UnsafeArgument):
                family.render(**args)
        # the same value spliced into the command text by hand is refused too
        example = family.kinds[key].example
        for bad in ("-delete", "--privileged", "-oProxyCommand=sh", "--host=evil"):
            assert not is_read_only(family.example().replace(example, bad, 1)), (family.name, bad)


@pytest.mark.parametrize("command", [
    "fuser -k /dev/nvidia*",
    "cat /etc/pve/lxc/129.conf; reboot",
    "cat /etc/pve/lxc/129.conf && pct stop 129",
    "systemctl restart sglang.service",
    "systemctl show -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Environment x | sh",
    "systemctl show -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Environment --host=evil x.service",
    "docker rm -f vllm-glm-4.7-flash",
    "docker exec vllm-qwen35 ray stop --force",
    "docker exec --privileged ray list nodes --format json",
    "docker exec vllm-qwen35 ray list nodes --format json > /etc/passwd",
    "pct exec 129 -- pkill -9 -f python3",
    "sha256sum -- /models/a `rm -rf /`",
    "sha256sum -- /models/a -delete",
    "grep -hE 'NCCL (INFO|WARN)' /var/log/x.log | tee /etc/motd",
    "nvidia-smi -r",
    "nvidia-smi -pm 1",
    "nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader; nvidia-smi -r",
    "nvidia-smi --query-gpu=pci.bus_id,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,"
    "clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,"
    "clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost --format=csv,noheader -pm 0",
    "journalctl -k -b --no-pager -g 'NVRM: Xid|Linux version' --vacuum-time=1s",
    "journalctl --rotate",
    "dmesg -C",
    "dmesg 2>&1 | grep -E 'NVRM: Xid|Linux version|dmesg: ' > /dev/kmsg",
])
def test_changing_commands_are_not_on_the_allow_list(command):
    assert not is_read_only(command)


def test_a_hostile_inventory_value_is_refused_not_run():
    with pytest.raises(UnsafeArgument, match="container name"):
        CONTAINER_INSPECT.render(name="x; reboot")
    with pytest.raises(UnsafeArgument):
        NCCL_FILE.render(path="/var/log/x.log; reboot")
    assert not is_read_only("docker inspect --type container 'x; reboot'")


def _run_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run":
            yield node


@pytest.mark.parametrize("path", sorted(CONTRACT.glob("test_*.py")), ids=lambda p: p.name)
def test_contract_tests_send_only_command_constants(path):
    """A host test that runs a command directly must pass `<CONSTANT>.render(...)`, never a literal."""
    for call in _run_calls(ast.parse(path.read_text())):
        first = call.args[0] if call.args else None
        assert isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) \
            and first.func.attr == "render" and isinstance(first.func.value, ast.Name) \
            and first.func.value.id.isupper(), f"{path.name}:{call.lineno} runs something that is not a constant"


def test_option_shaped_transport_values_never_reach_ssh_or_docker():
    """An ssh address `-oProxyCommand=...` or a container `--privileged` that got past the inventory is refused
    when the connection is made, before ssh or docker is started."""
    from llmval.inventory import DockerTransport, SshTransport
    from llmval.io.transport import connect

    transports = [
        SshTransport.model_construct(kind="ssh", address="-oProxyCommand=touch /tmp/llmval-pwned", user="root",
                                     port=22, identity_file=None, ssh_config=None, password_env=None),
        SshTransport.model_construct(kind="ssh", address="node", user="--host=evil", port=22, identity_file=None,
                                     ssh_config=None, password_env=None),
        DockerTransport.model_construct(kind="docker", container="--privileged", via=None),
    ]
    for transport in transports:
        spec = HostSpec.model_construct(name="h", platform="p", transport=transport, timeout_s=5.0)
        with pytest.raises(UnsafeArgument, match="starts with '-'"):
            connect(spec)



def test_the_reported_exploit_run_end_to_end_deletes_nothing(pytester):
    """The issue's probe: an inventory with `model_files.path = "-delete"`, a plain smoke run (no --launch), a
    canary file in the working directory. Before: `find -L -delete ...` ran and emptied it. Now the inventory is
    refused at load, or the check cannot be built: the canary stays, the verdict says why."""
    from ._contract import run_hosts

    inventory = pytester.path / "exploit.toml"
    inventory.write_text('[deployment]\nname = "exploit"\n\n[[hosts]]\nname = "me"\nplatform = "p"\n'
                         'transport = { kind = "local" }\n\n[[hosts.model_files]]\npath = "-delete"\n')
    canary = pytester.path / "canary.txt"
    canary.write_text("still here")
    result, outcomes = run_hosts(pytester, "--inventory", str(inventory), "-m", "smoke", "-p", "no:xdist")
    assert canary.read_text() == "still here"
    present = {n: m for n, (o, m) in outcomes.items() if "test_model_files_present" in n}
    if result.ret == 4:  # refused when the inventory loads (SAFETY's validation)
        assert "-delete" in result.stdout.str() + result.stderr.str()
    else:
        assert present and all("UnsafeArgument" in m and "starts with '-'" in m for m in present.values()), \
            result.stdout.str()[-2000:]


PINNED = Path(__file__).with_name("pinned_commands.json")


def test_no_host_fact_command_ever_changes():
    """Adding a fact or a query field adds a command; it never changes one (recordings would stop matching).
    `pinned_commands.json` holds every host-fact command as first declared: each must still be declared, byte
    for byte. A new fact may be added to the file; an entry is never edited (re-record instead, and say so)."""
    pinned = json.loads(PINNED.read_text())
    declared = {c.name: c.template for c in READ_ONLY}
    changed = {name: (template, declared.get(name)) for name, template in pinned.items()
               if declared.get(name) != template}
    assert changed == {}, f"existing host commands changed or vanished (name: (pinned, now)): {changed}"
