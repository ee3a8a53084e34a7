"""`llmval init`: for every platform, the scaffold's inventory passes `llmval check-inventory`, the systemd unit
runs the smoke contract with --wait-ready on that inventory, the workflow keeps GitHub's expressions and installs
llmval as it was installed here, pinned; pytest.ini turns the contract on (unless the folder has its own pytest
configuration); no written file holds the writing machine's path, and the template units resolve to a repo under
/tmp or /srv (`systemd-analyze verify`, where installed); a second init overwrites nothing."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import pytest

from llmval.__main__ import main
from llmval.cli.init import PLATFORMS, install_requirement, installed_requirement
from llmval.inventory import load_inventory


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_init_writes_a_valid_inventory_and_its_runners(platform, tmp_path, capsys):
    folder = tmp_path / f"ops {platform}"
    assert main(["init", str(folder), "--platform", platform]) == 0
    assert main(["check-inventory", str(folder / "inventory.toml")]) == 0
    inventory = load_inventory(folder / "inventory.toml")
    assert [e.engine for e in inventory.endpoints] == [platform]
    assert inventory.deployment.name == f"ops-{platform}"
    service = (folder / "systemd" / "llmval-smoke@.service").read_text()
    assert "ExecStart=%f/.venv/bin/pytest --inventory=inventory.toml -m smoke --wait-ready=900" in service
    assert "WorkingDirectory=%f" in service and "PrivateTmp=yes" not in service
    assert "Unit=llmval-smoke@%i.service" in (folder / "systemd" / "llmval-smoke@.timer").read_text()
    # issue 47: every run writes its Prometheus textfile into the collector's folder (overridable), a failure notifies
    assert (f"--prometheus-textfile=${{LLMVAL_TEXTFILE_DIR}}/llmval-ops-{platform}.prom" in service
            and "Environment=LLMVAL_TEXTFILE_DIR=/var/lib/prometheus/node-exporter" in service)
    assert "\nOnFailure=llmval-notify@%n.service\n" in service
    assert "ExecStart=" in (folder / "systemd" / "llmval-notify@.service").read_text()
    workflow = (folder / ".github" / "workflows" / "llmval.yml").read_text()
    assert "${{ github.run_id }}" in workflow and "$name" not in workflow
    assert "--inventory=inventory.toml" in workflow and "-m \"$MARKEXPR\"" in workflow
    assert '--prometheus-textfile="$PROMETHEUS_TEXTFILE"' in workflow
    assert "llmval trend --history=reports/history --out=reports/trend" in workflow
    install = shlex.quote(installed_requirement())  # as this llmval was installed (the package index lacks it)
    assert f"pip install -q {install}" in workflow and f"pip install {install}" in service
    assert (folder / "pytest.ini").read_text().splitlines()[-1] == "llmval_inventory = inventory.toml"
    for written in folder.rglob("*"):
        if written.is_file():
            assert str(tmp_path) not in written.read_text(), f"{written} holds the writing machine's path"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
@pytest.mark.parametrize("repo", ["/tmp/llmval-ops-selftest", "/srv/llmval ops"])
def test_the_template_units_resolve_to_the_repo_wherever_it_lives(repo, tmp_path, capsys):
    """`systemd-analyze verify` of an instance for `repo`: %f becomes the repo, ExecStart names its venv's pytest
    (here missing: verify says so for exactly that path, the one check that needs the repo to exist)."""
    assert main(["init", str(tmp_path / "ops"), "--platform", "sglang"]) == 0
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
    assert problems == [f"llmval-smoke@{instance}.service: Command {repo}/.venv/bin/pytest is not executable: "
                        "No such file or directory"], problems


def test_init_never_overwrites(tmp_path, capsys):
    (tmp_path / "inventory.toml").write_text("mine\n")
    assert main(["init", str(tmp_path), "--platform", "vllm"]) == int(pytest.ExitCode.USAGE_ERROR)
    assert "never overwrites" in capsys.readouterr().err
    assert (tmp_path / "inventory.toml").read_text() == "mine\n"
    assert not (tmp_path / "systemd").exists()


@pytest.mark.parametrize(("direct_url", "expected"), [
    (None, "pytest-llmval==0.1.0"),
    ({"url": "https://github.com/o/llmval.git", "vcs_info": {"vcs": "git", "commit_id": "0a1b2c"}},
     "pytest-llmval @ git+https://github.com/o/llmval.git@0a1b2c"),
    ({"url": "file:///srv/dist/pytest_llmval-0.1.0-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "ff00"}}},
     "pytest-llmval @ file:///srv/dist/pytest_llmval-0.1.0-py3-none-any.whl#sha256=ff00"),
    ({"url": "file:///nonexistent/llmval", "dir_info": {"editable": True}}, "pytest-llmval @ file:///nonexistent/llmval"),
], ids=["index", "git", "wheel", "folder"])
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
    assert install_requirement({"url": url, "dir_info": {}}, "0.1.0") == f"pytest-llmval @ git+{url}@{head}"
    (checkout / "x").write_text("2\n")  # uncommitted: the commit is not what is installed
    assert install_requirement({"url": url, "dir_info": {}}, "0.1.0") == f"pytest-llmval @ {url}"


def test_init_beside_a_pytest_configuration_says_where_the_setting_goes(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-ra"\n')
    assert main(["init", str(tmp_path), "--platform", "vllm"]) == 0
    assert not (tmp_path / "pytest.ini").exists()  # it would take precedence over their pyproject's settings
    assert f"{tmp_path / 'pyproject.toml'} is this folder's pytest configuration: add `llmval_inventory = " \
           "inventory.toml`" in capsys.readouterr().out
