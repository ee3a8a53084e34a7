"""`llmval init`: for every platform, the scaffold's inventory passes `llmval check-inventory`, the systemd unit
runs the smoke contract with --wait-ready on that inventory, the workflow keeps GitHub's expressions and installs
llmval as it was installed here, pinned; pytest.ini turns the contract on (unless the folder has its own pytest
configuration); no written file holds the writing machine's path, and the template units resolve to a repo under
/tmp or /srv (`systemd-analyze verify`, where installed); a second init overwrites nothing."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llmval.__main__ import main
from llmval.cli.init import (
    PLATFORMS,
    install_requirement,
    install_source,
    installed_source,
    render,
)
from llmval.inventory import inventory_json_schema, load_inventory

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_init_writes_a_valid_inventory_and_its_runners(platform, tmp_path, capsys):
    folder = tmp_path / f"ops {platform}"
    assert main(["init", str(folder), "--engine", platform]) == 0
    assert main(["check-inventory", str(folder / "inventory.toml")]) == 0
    inventory = load_inventory(folder / "inventory.toml")
    assert [e.engine for e in inventory.endpoints] == [platform]
    assert inventory.deployment.name == f"ops-{platform}"
    service = (folder / "systemd" / "llmval-smoke@.service").read_text()
    assert "exec %f/.venv/bin/pytest --inventory=inventory.toml -m smoke --wait-ready=900 \"$$@\"'" in service
    assert "WorkingDirectory=%f" in service and "PrivateTmp=yes" not in service
    assert "Unit=llmval-smoke@%i.service" in (folder / "systemd" / "llmval-smoke@.timer").read_text()
    # issue 47: every run writes its Prometheus textfile into the collector's folder (overridable), a failure notifies
    # (only where the collector's folder exists: a host without node_exporter still gets its smoke verdict)
    assert (f'if [ -d "$$LLMVAL_TEXTFILE_DIR" ]; then set -- "--prometheus-textfile=$$LLMVAL_TEXTFILE_DIR/'
            f'llmval-ops-{platform}.prom"; else echo "llmval: no folder' in service
            and "Environment=LLMVAL_TEXTFILE_DIR=/var/lib/prometheus/node-exporter" in service)
    assert "\nOnFailure=llmval-notify@%n.service\n" in service
    assert "ExecStart=" in (folder / "systemd" / "llmval-notify@.service").read_text()
    workflow = (folder / ".github" / "workflows" / "llmval.yml").read_text()
    assert "${{ github.run_id }}" in workflow and "$name" not in workflow
    assert "--inventory=inventory.toml" in workflow and "-m \"$MARKEXPR\"" in workflow
    assert '--prometheus-textfile="$PROMETHEUS_TEXTFILE"' in workflow
    assert "llmval trend --history=reports/history --out=reports/trend" in workflow
    install = shlex.quote(installed_source().requirement)  # as this llmval was installed (the package index lacks it)
    assert f"pip install -q {install}" in workflow and f"pip install {install}" in service
    assert (folder / "pytest.ini").read_text().splitlines()[-1] == "llmval_inventory = inventory.toml"
    for written in folder.rglob("*"):
        if written.is_file():
            assert str(tmp_path) not in written.read_text(), f"{written} holds the writing machine's path"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
@pytest.mark.parametrize("repo", ["/tmp/llmval-ops-selftest", "/srv/llmval ops"])
def test_the_template_units_resolve_to_the_repo_wherever_it_lives(repo, tmp_path, capsys):
    """`systemd-analyze verify` of an instance for `repo`: the three units verify clean (ExecStart is /bin/sh, which
    runs the repo's venv's pytest: %f, the repo, inside its command, which verify does not read)."""
    assert main(["init", str(tmp_path / "ops"), "--engine", "sglang"]) == 0
    instance = subprocess.run(["systemd-escape", "--path", repo], capture_output=True, text=True,
                              check=True).stdout.strip()
    units = tmp_path / "units"
    units.mkdir()
    for template in ("llmval-smoke@.service", "llmval-smoke@.timer", "llmval-notify@.service"):
        shutil.copy(tmp_path / "ops" / "systemd" / template, units / template)
    notify = f"llmval-notify@llmval-smoke@{instance}.service.service"  # as the smoke unit's OnFailure= names it
    for template, unit in (("llmval-smoke@.service", f"llmval-smoke@{instance}.service"),
                           ("llmval-smoke@.timer", f"llmval-smoke@{instance}.timer"),
                           ("llmval-notify@.service", notify)):
        os.symlink(template, units / unit)
    verify = subprocess.run(["systemd-analyze", "verify", "--man=no", str(units / f"llmval-smoke@{instance}.service"),
                             str(units / f"llmval-smoke@{instance}.timer"), str(units / notify)],
                            capture_output=True, text=True, timeout=60)
    problems = [line for line in (verify.stdout + verify.stderr).splitlines() if line.strip()]
    assert problems == [], problems


@pytest.mark.subprocess
@pytest.mark.parametrize("collector", [True, False], ids=["node_exporter", "no-node_exporter"])
def test_the_smoke_unit_writes_the_textfile_only_where_the_collector_folder_is(collector, tmp_path, capsys):
    """The unit's ExecStart as systemd runs it (%f the repo, `$$` a `$`, the unit's environment): with the collector's
    folder it passes --prometheus-textfile into it; without it, pytest runs all the same, the journal says why."""
    assert main(["init", str(tmp_path / "ops"), "--engine", "sglang"]) == 0
    service = (tmp_path / "ops" / "systemd" / "llmval-smoke@.service").read_text()
    command = next(line for line in service.splitlines() if line.startswith("ExecStart="))[len("ExecStart="):]
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    stand_in = repo / ".venv" / "bin" / "pytest"  # says the arguments it was given, one a line
    stand_in.write_text('#!/bin/sh\nfor a in "$@"; do echo "arg: $a"; done\n')
    stand_in.chmod(0o755)
    collector_dir = tmp_path / "node-exporter"
    if collector:
        collector_dir.mkdir()
    argv = shlex.split(command.replace("%f", str(repo)).replace("$$", "$"))
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                         env={"PATH": os.environ["PATH"], "LLMVAL_TEXTFILE_DIR": str(collector_dir)})
    assert ran.returncode == 0, ran.stderr
    args = [line[len("arg: "):] for line in ran.stdout.splitlines() if line.startswith("arg: ")]
    assert args[:4] == ["--inventory=inventory.toml", "-m", "smoke", "--wait-ready=900"]
    if collector:
        assert args[4:] == [f"--prometheus-textfile={collector_dir}/llmval-ops.prom"], ran.stdout
    else:
        assert args[4:] == [] and f"no folder {collector_dir}: this run writes no Prometheus textfile" in ran.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed here")
def test_a_new_ops_repo_ignores_its_venv_and_reports_and_an_existing_gitignore_is_kept(tmp_path, capsys):
    """A new user's `python3 -m venv .venv` inside the repo (as the README says), then `git add -A`: before, the
    venv (Python 3.11's venv has no .gitignore of its own) and every run's reports went into the commit."""
    fresh = tmp_path / "fresh"
    assert main(["init", str(fresh), "--engine", "sglang"]) == 0
    assert f"wrote {fresh / '.gitignore'}" in capsys.readouterr().out
    subprocess.run(["git", "init", "-q", str(fresh)], check=True)
    paths = [".venv/bin/python", "reports/status.md", "reports/history/results-x.json", "inventory.toml",
             "tests/test_mine.py", "systemd/llmval-smoke@.service"]
    ignored = subprocess.run(["git", "-C", str(fresh), "check-ignore", "--no-index", *paths],
                             capture_output=True, text=True).stdout.split()
    assert ignored == paths[:3]
    own = tmp_path / "own"
    own.mkdir()
    (own / ".gitignore").write_text("mine\n")
    assert main(["init", str(own), "--engine", "sglang"]) == 0  # their .gitignore is no reason to refuse
    assert (own / ".gitignore").read_text() == "mine\n" and ".gitignore" not in capsys.readouterr().out
    assert (own / "inventory.toml").is_file()


def test_init_never_overwrites(tmp_path, capsys):
    (tmp_path / "inventory.toml").write_text("mine\n")
    assert main(["init", str(tmp_path), "--engine", "vllm"]) == int(pytest.ExitCode.USAGE_ERROR)
    assert "never overwrites" in capsys.readouterr().err
    assert (tmp_path / "inventory.toml").read_text() == "mine\n"
    assert not (tmp_path / "systemd").exists()


def test_init_into_a_file_or_a_looping_link_names_it_and_what_to_name_instead(tmp_path, capsys):
    (tmp_path / "ops").write_text("a file\n")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert main(["init", str(tmp_path / "ops"), "--engine", "vllm"]) == int(pytest.ExitCode.USAGE_ERROR)
    said = capsys.readouterr().err
    assert f"{tmp_path / 'ops'} is not a folder" in said and "name the ops repository's folder" in said
    assert main(["init", str(tmp_path / "loop"), "--engine", "vllm"]) == int(pytest.ExitCode.USAGE_ERROR)
    said = capsys.readouterr().err
    assert f"{tmp_path / 'loop'} is not a folder" in said and "name the ops repository's folder" in said


@pytest.mark.parametrize(("direct_url", "expected"), [
    (None, "pytest-llmval==0.1.0"),
    ({"url": "https://github.com/o/llmval.git", "vcs_info": {"vcs": "git", "commit_id": "0a1b2c"}},
     "pytest-llmval @ git+https://github.com/o/llmval.git@0a1b2c"),
    ({"url": "file:///srv/llmval", "vcs_info": {"vcs": "git", "commit_id": "0a1b2c"}},
     "git+file:///srv/llmval@0a1b2c#egg=pytest-llmval"),
    ({"url": "file:///srv/dist/pytest_llmval-0.1.0-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "ff00"}}},
     "pytest-llmval @ file:///srv/dist/pytest_llmval-0.1.0-py3-none-any.whl#sha256=ff00"),
    ({"url": "file:///nonexistent/llmval", "dir_info": {"editable": True}}, "pytest-llmval @ file:///nonexistent/llmval"),
], ids=["index", "git", "git-on-this-machine", "wheel", "folder"])
def test_the_install_line_is_how_this_llmval_was_installed_pinned(direct_url, expected):
    assert install_requirement(direct_url, "0.1.0") == expected


def test_a_local_git_checkout_is_pinned_to_its_commit(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed here")
    checkout = tmp_path / "llmval checkout"
    checkout.mkdir()
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (checkout / "x").write_text("1\n")
    subprocess.run([*git, "add", "x"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    url = checkout.as_uri()
    assert install_requirement({"url": url, "dir_info": {}}, "0.1.0") == f"git+{url}@{head}#egg=pytest-llmval"
    (checkout / "x").write_text("2\n")  # uncommitted: the commit is not what is installed
    assert install_requirement({"url": url, "dir_info": {}}, "0.1.0") == f"pytest-llmval @ {url}"


def test_init_beside_a_pytest_configuration_says_where_the_setting_goes(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-ra"\n')
    assert main(["init", str(tmp_path), "--engine", "vllm"]) == 0
    assert not (tmp_path / "pytest.ini").exists()  # it would take precedence over their pyproject's settings
    assert f"{tmp_path / 'pyproject.toml'} is this folder's pytest configuration: add `llmval_inventory = " \
           "inventory.toml`" in capsys.readouterr().out


def _git_checkout(folder, *, remote: str = ""):
    """A git work tree at `folder` with one commit (and `remote` as its origin); its commit."""
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    folder.mkdir()
    subprocess.run([*git, "init", "-q"], check=True)
    (folder / "x").write_text("1\n")
    subprocess.run([*git, "add", "x"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    if remote:
        subprocess.run([*git, "remote", "add", "origin", remote], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize(("remote", "suggested"), [
    ("https://git.example.org/ops/llmval.git", "pytest-llmval @ git+https://git.example.org/ops/llmval.git@{head}"),
    ("git@git.example.org:ops/llmval.git", "pytest-llmval @ git+ssh://git@git.example.org/ops/llmval.git@{head}"),
    ("", ""),
], ids=["https-remote", "scp-remote", "no-remote"])
def test_a_source_on_this_machine_is_said_with_the_remote_to_use_instead(remote, suggested, tmp_path, monkeypatch,
                                                                         capsys):
    """Issue 46.1: a `file://` source is said at init and above the line in both written files (a CI runner
    elsewhere cannot see it), with the checkout's git remote at the same commit where it has one."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed here")
    checkout = tmp_path / "llmval checkout"
    head = _git_checkout(checkout, remote=remote)
    source = install_source({"url": checkout.as_uri(), "dir_info": {}}, "0.1.0")
    assert source.local_path == checkout
    assert source.remote_requirement == suggested.format(head=head)
    monkeypatch.setattr("llmval.cli.init.installed_source", lambda: source)
    assert main(["init", str(tmp_path / "ops"), "--engine", "sglang"]) == 0
    said = capsys.readouterr().out
    assert f"note: that line installs from {checkout}, a path on the machine that ran `llmval init`" in said
    workflow = (tmp_path / "ops" / ".github" / "workflows" / "llmval.yml").read_text()
    service = (tmp_path / "ops" / "systemd" / "llmval-smoke@.service").read_text()
    for text in (said, workflow, service):
        assert f"installs from {checkout}, a path on the machine" in text
        assert (f"use `pip install {shlex.quote(source.remote_requirement)}`" in text) == bool(remote)
    steps = yaml.safe_load(workflow)["jobs"]["contract"]["steps"]  # the note is a comment, the line still YAML
    assert f".venv/bin/pip install -q {shlex.quote(source.requirement)}" in [step.get("run", "")[-300:].split(
        " && ")[-1] for step in steps]


def test_a_source_any_machine_reaches_gets_no_note(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("llmval.cli.init.installed_source", lambda: install_source(None, "0.1.0"))
    assert main(["init", str(tmp_path), "--engine", "vllm"]) == 0
    assert "note:" not in capsys.readouterr().out
    assert "a path on the machine" not in (tmp_path / ".github" / "workflows" / "llmval.yml").read_text()


@pytest.mark.subprocess
@pytest.mark.slow
def test_pip_23_installs_the_line_init_writes_for_a_local_checkout(tmp_path):
    """Issue 46.1: pip 23.x (Debian 12's 23.0.1; Python 3.11's venv brings 23.2.1) installs the exact line the
    workflow gets for a local git checkout of llmval; it refused `pytest-llmval @ git+file:///...` ("Invalid
    requirement ... It looks like a path"). pip 23.0.1 where an index has it, else the venv's own 23.x."""
    if shutil.which("git") is None or subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                                                     capture_output=True).returncode != 0:
        pytest.skip("git is not installed here, or this copy of llmval is no git checkout")
    checkout = tmp_path / "llmval"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(checkout)], check=True, timeout=120)
    source = install_source({"url": checkout.as_uri(), "dir_info": {}}, "0.1.0")
    workflow = render("workflow.yml", "sglang", tmp_path / "ops", source)
    line = next(step["run"] for step in yaml.safe_load(workflow)["jobs"]["contract"]["steps"]
                if "pip install" in step.get("run", ""))
    assert line.endswith(f"pip install -q {shlex.quote(source.requirement)}") and "#egg=pytest-llmval" in line
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "-q", "pip==23.0.1"], capture_output=True, timeout=240)  # offline: the venv's
    version = subprocess.run([*pip, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
    if not version.startswith("23."):
        pytest.skip(f"this Python's venv brings pip {version} and no index has pip 23.0.1")
    install = subprocess.run(["sh", "-c", line.replace(".venv/bin/pip install -q", " ".join(pip) + " install -q "
                                                        "--no-deps").removeprefix("python3 -m venv .venv && ")],
                             capture_output=True, text=True, timeout=480)
    assert install.returncode == 0, f"pip {version}: {install.stderr[-2000:]}"
    shown = subprocess.run([*pip, "show", "pytest-llmval"], capture_output=True, text=True, timeout=60)
    assert "Name: pytest-llmval" in shown.stdout, shown.stderr


def test_init_in_a_fresh_folder_says_nothing_about_adding_the_line_it_wrote(tmp_path, capsys):
    """Issue 46.7: pytest.ini written, so no "add `llmval_inventory = ...`" line (that is for a folder's own config)."""
    assert main(["init", str(tmp_path), "--engine", "vllm"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'pytest.ini'}" in out and "add `llmval_inventory" not in out


def test_the_old_option_name_still_works_and_says_the_new_one(tmp_path, capsys):
    """Issue 46.7: `--engine` is the engine (an inventory's `platform` groups hosts); `--platform` still works."""
    assert main(["init", str(tmp_path), "--platform", "vllm"]) == 0
    assert "--platform is now --engine" in capsys.readouterr().err
    assert [e.engine for e in load_inventory(tmp_path / "inventory.toml").endpoints] == ["vllm"]
    assert main(["init", str(tmp_path / "none")]) == int(pytest.ExitCode.USAGE_ERROR)
    assert "name the engine served: --engine" in capsys.readouterr().err


CHOICES_COMMENT_RE = re.compile(r"^#?\s*(?P<key>\w+)\s*=\s*[^#{]*#\s*(?P<choices>[\w.-]+(?:\s*\|\s*[\w.-]+)+)\s*(:|$)")
"""`key = value   # a | b | c` (commented out or not; a value of scalars, not an inline table)."""
SECTION_RE = re.compile(r"^#?\s*\[\[?(?P<section>[\w.]+)\]\]?")


def _alternatives(schema: dict, node: dict) -> list[dict]:
    """`node` with its $ref, anyOf/oneOf and array items resolved: the object or value schemas it may be."""
    if "$ref" in node:
        return _alternatives(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    if "anyOf" in node or "oneOf" in node:
        return [a for option in node.get("anyOf", node.get("oneOf")) for a in _alternatives(schema, option)]
    if node.get("type") == "array" and "items" in node:
        return _alternatives(schema, node["items"])
    return [node]


def _enum_at(schema: dict, path: list[str]) -> list | None:
    """The choices the schema gives the inventory key at `path` (`["hosts", "gpus", "p2p"]`), None if none."""
    nodes = [schema]
    for part in path:
        nodes = [a for n in nodes for a in _alternatives(schema, n.get("properties", {}).get(part, {}))
                 if n.get("properties", {}).get(part)]
    return next((n["enum"] for n in nodes if "enum" in n), None)


def test_the_templates_choices_are_the_ones_the_inventory_takes():
    """Issue 46.7: every `# key = value   # a | b` the inventory template lists is exactly the schema's choices
    for that key (the template said `p2p = supported | blocked`; the inventory takes supported | unsupported)."""
    schema = json.loads(inventory_json_schema())
    section, compared = [], []
    for line in render("inventory.toml", "sglang", ROOT).splitlines():
        if header := SECTION_RE.match(line):
            section = header["section"].split(".")
        elif found := CHOICES_COMMENT_RE.match(line):
            choices = sorted(c.strip() for c in found["choices"].split("|"))
            enum = _enum_at(schema, [*section, found["key"]])
            compared.append(".".join([*section, found["key"]]))
            assert enum is not None and choices == sorted(map(str, enum)), (line, enum)
    assert {"hosts.gpus.p2p", "deployment.kind", "endpoints.engine", "hosts.nccl.expect_transport",
            "endpoints.expect.kv_cache_dtype", "endpoints.tool_calls.variants"} <= set(compared), compared
