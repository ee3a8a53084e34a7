"""A new user's first day with llmval installed into a fresh ops repo, round two (issue 34, items 1-8; item 0, the
README's two commands in order, is selftest/plugin/test_quickstart.py). The repo is `ops` (selftest/plugin/
opsrepo.py): the wheel in a venv inside it, `llmval init` run there, their kpro6 inventory and recording, their two
testinfra tests; each test below changes a copy of it (`ops.clone`), never the repo itself.

1. the install line `llmval init` writes is how this llmval was installed, pinned, and it installs;
2. the contract is never silently off: init's pytest.ini turns it on, --replay/--launch without an inventory are
   usage errors, and a run beside an inventory nothing named says how to turn the contract on;
3. the generated CI command runs the team's unmarked tests with the smoke checks, and the run keeps the smoke scope;
4. `--replay /abs/path` (a space) that would move pytest's rootdir is a usage error saying to write `=`;
5. every junit <failure>/<error> has a `type`;
6. a run from a subdirectory writes the repo's reports/ and reads the ini's inventory path against the ini file;
7. the run says what it deselected and why;
8. a wrong --inventory path names the inventory that is there; `llmval --help` says how to run the contract, and
   check-inventory's argument has a help; `| head` leaves this run's status.md and junit.xml; `-n 2` leaks no
   PytestBenchmarkWarning.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from selftest.plugin.opsrepo import FP8_KV, REPLAYS, OpsRepo
from selftest.strategies import ROOT

pytestmark = pytest.mark.subprocess  # a wheel built and installed, pytest and llmval run from it

THEIR_PLAIN_TESTS = '''"""The team's own tests, as they were before llmval: no marker at all."""
import pytest


def test_hostname_is_set(host):
    assert host.check_output("hostname")


@pytest.fixture
def site_settings():
    return {}["site"]  # a fixture of theirs that is broken: a setup error


def test_uses_a_broken_fixture(site_settings):
    pass


def test_a_plain_failure():
    assert 1 + 1 == 3
'''


def _results(folder: Path) -> dict[str, str]:
    return {t["nodeid"]: t["outcome"] for t in json.loads((folder / "reports" / "results.json").read_text())["tests"]}


def _out(run: subprocess.CompletedProcess) -> str:
    return run.stdout[-3000:] + run.stderr[-2000:]


def _python_pytest(repo: OpsRepo, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """pytest in the repo as its own ini file configures it (no --inventory, no --replay added)."""
    return repo.run("python", "-m", "pytest", "-p", "no:randomly", *args, cwd=cwd)


# ---- 1. the install line ---------------------------------------------------------------------------------------

def test_the_generated_install_line_is_this_install_pinned_and_it_installs(ops, tmp_path):
    workflow = (ops.path / ".github" / "workflows" / "llmval.yml").read_text()
    line = re.search(r"\.venv/bin/pip install -q (.+)$", workflow, re.MULTILINE)
    assert line, workflow
    requirement = shlex.split(line.group(1))
    assert requirement == [f"pytest-llmval @ {ops.wheel.as_uri()}#sha256=" + requirement[0].rpartition("=")[2]], \
        requirement  # the wheel this repo installed, by its hash: not the index's name, which it does not have
    service = (ops.path / "systemd" / "llmval-smoke@.service").read_text()
    assert f"pip install {line.group(1)}" in service
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=120)
    again = subprocess.run([str(tmp_path / "venv" / "bin" / "pip"), "install", "-q", "--no-index", "--no-deps",
                            "--disable-pip-version-check", *requirement], capture_output=True, text=True, timeout=240)
    assert again.returncode == 0, again.stderr[-2000:]


def test_a_wheel_built_from_a_used_checkout_ships_no_stale_module(tmp_path):
    """A checkout built before keeps build/lib; a module deleted since then must not ship (`pip install <checkout>`
    is the install line the README gives)."""
    checkout = tmp_path / "llmval"
    for part in ("src", "fixtures", "tests", "inventories"):
        shutil.copytree(ROOT / part, checkout / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for part in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / part, checkout / part)
    stale = checkout / "build" / "lib" / "llmval" / "report" / "moved_away.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("ANSWER = 'from an earlier build'\n")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(tmp_path / "dist"), str(checkout)], check=True,
                   capture_output=True, timeout=240)
    with zipfile.ZipFile(next((tmp_path / "dist").glob("pytest_llmval-*.whl"))) as wheel:
        names = wheel.namelist()
    assert "llmval/report/junit.py" in names and "llmval/report/moved_away.py" not in names


# ---- 2. the contract never silently off ------------------------------------------------------------------------

def test_init_turns_the_contract_on_for_a_bare_pytest(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    assert "llmval_inventory = inventory.toml" in (repo.path / "pytest.ini").read_text()
    run = _python_pytest(repo, "-m", "smoke or not llmval", "--replay=rec", "-q")
    ids = _results(repo.path)
    assert run.returncode == 0 and "llmval/hosts/test_gpus.py::test_gpu_count_matches_inventory[kpro6-ct129]" in ids, \
        _out(run)  # the contract ran, and no --inventory was given
    assert ids["tests/test_theirs.py::test_passwd_belongs_to_root[local]"] == "passed"


def test_llmval_options_without_an_inventory_are_usage_errors_and_a_run_says_how_to_turn_it_on(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    (repo.path / "pytest.ini").unlink()  # as before `llmval init` wrote it
    for options in (["--replay=rec"], ["--launch"], ["--record=rec2"], ["--wait-ready=5"], ["-m", "smoke", "--launch"]):
        run = _python_pytest(repo, *options)
        assert run.returncode == 4 and "without an inventory: inventory.toml is there: add `llmval_inventory = " \
            "inventory.toml` to pytest.ini's [pytest]" in run.stderr, (options, _out(run))
    bare = _python_pytest(repo, "-q")
    assert bare.returncode == 0 and "2 passed" in bare.stdout, _out(bare)
    assert "llmval: the contract did not run (no inventory given); inventory.toml is there: add `llmval_inventory " \
           "= inventory.toml`" in bare.stdout, _out(bare)


# ---- 3. the team's tests in the generated CI, 7. what was deselected ------------------------------------------

def test_the_generated_ci_command_runs_their_unmarked_tests_with_the_smoke_checks(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    (repo.path / "tests" / "test_plain.py").write_text(THEIR_PLAIN_TESTS.split("\n\n@pytest.fixture")[0] + "\n")
    workflow = (repo.path / ".github" / "workflows" / "llmval.yml").read_text()
    markexpr = re.search(r"\|\| '([^']+)' }}", workflow).group(1)  # the push job's
    command = re.search(r"run: \.venv/bin/pytest (.+)$", workflow, re.MULTILINE).group(1)
    folder, name = re.search(r"PROMETHEUS_TEXTFILE: \$\{\{ vars\.LLMVAL_TEXTFILE_DIR \|\| '([^']+)' }}(\S+)",
                             workflow).groups()  # without the repository variable: with the reports
    args = [a.replace("$MARKEXPR", markexpr).replace("$PROMETHEUS_TEXTFILE", folder + name)
            for a in shlex.split(command) if not a.startswith("--wait-ready")]
    run = _python_pytest(repo, *args, "--replay=rec")  # the CI step, replayed instead of waiting for the stack
    ids = _results(repo.path)
    textfile = (repo.path / folder / name.lstrip("/")).read_text()  # issue 47: the run's series, GREEN
    # replayed, its series are the replay's (scope="replay"), never the live smoke series an alert reads
    assert re.search(r'^llmval_run_exit_status\{deployment="[\w-]+",scope="replay"\} 0\.0$', textfile, re.M), textfile
    assert 'scope="smoke"' not in textfile
    assert run.returncode == 0 and ids["tests/test_plain.py::test_hostname_is_set[local]"] == "passed", _out(run)
    smoke = _python_pytest(repo, "-m", "smoke", "--replay=rec", "--collect-only", "-q").stdout
    assert {i for i in ids if i.startswith("llmval/")} == {line for line in smoke.splitlines()
                                                           if line.startswith("llmval/")}
    assert "Verdict: **GREEN**" in (repo.path / "reports" / "replay" / "status.md").read_text()
    assert json.loads((repo.path / "reports" / "results.json").read_text())["scope"] == "smoke"  # not partial
    line = re.search(r"^llmval: (\d+) deselected: (.+)$", run.stdout, re.MULTILINE)
    assert line, run.stdout[-2000:]
    parts = dict(re.fullmatch(r"(\d+) (.+)", part).group(2, 1) for part in re.split(r", (?=\d)", line[2]))
    assert parts.get("by -m smoke or not llmval") and sum(map(int, parts.values())) == int(line[1]), parts
    assert any(why.startswith("readiness verdicts (serving.ready, hosts.ready: judged only for what --wait-ready")
               for why in parts), parts


# ---- 4. a path option written with a space --------------------------------------------------------------------

def test_replay_of_an_absolute_path_with_a_space_is_a_usage_error_saying_to_use_equals(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    recording = REPLAYS / "hosts" / "SYNTHESIZED-kpro6-healthy"  # inside the llmval checkout: its pyproject.toml
    run = _python_pytest(repo, "--inventory=inventory.toml", "-m", "smoke", "--replay", str(recording), "--replay=rec")
    assert run.returncode == 4, _out(run)
    assert f"write --replay={recording}" in run.stderr and str(ROOT) in run.stderr, run.stderr


# ---- 5. junit `type` ------------------------------------------------------------------------------------------

def test_every_junit_failure_and_error_has_a_type(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    (repo.path / "tests" / "test_plain.py").write_text(THEIR_PLAIN_TESTS)
    for part in (repo.path / "rec").glob("*synth[01].jsonl"):  # the serving half: the FP8-KV deployment instead
        part.unlink()
    for part in FP8_KV.glob("*.jsonl"):
        (repo.path / "rec" / part.name).write_bytes(part.read_bytes())
    run = _python_pytest(repo, "--inventory=inventory.toml", "--replay=rec", "-m", "smoke or not llmval")
    assert run.returncode == 1, _out(run)
    cases = list(ElementTree.parse(repo.path / "reports" / "junit.xml").iter("testcase"))
    bad = {(c.get("classname"), c.get("name")): e for c in cases for e in c if e.tag in ("failure", "error")}
    assert len(bad) >= 3 and all(e.get("type") for e in bad.values()), {k: e.attrib for k, e in bad.items()}
    types = {name: e.get("type") for (_, name), e in bad.items()}
    assert types["test_a_plain_failure"] == "AssertionError" and types["test_uses_a_broken_fixture"] == "KeyError"
    assert "ContractBroken" in {t for name, t in types.items() if "kv" in name.lower()}, types


# ---- 6. a run from a subdirectory -----------------------------------------------------------------------------

def test_a_run_from_a_subdirectory_uses_the_repos_inventory_and_reports(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    (repo.path / "pytest.ini").write_text("[pytest]\nllmval_inventory = inventory.toml\n")  # as `llmval init` writes
    run = _python_pytest(repo, "-m", "smoke", "--replay=../rec", "-q", cwd=repo.path / "tests")
    assert run.returncode == 0, _out(run)
    assert not (repo.path / "tests" / "reports").exists()
    assert "Verdict: **GREEN**" in (repo.path / "reports" / "replay" / "status.md").read_text()


# ---- 8. the smaller ones --------------------------------------------------------------------------------------

def test_a_wrong_inventory_path_names_the_one_that_is_there(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    run = repo.run("python", "-m", "pytest", "--inventory=inventroy.toml", "-m", "smoke", "--replay=rec")
    assert run.returncode == 4 and "file not found" in run.stderr, _out(run)
    assert "inventory.toml is there: --inventory=inventory.toml" in run.stderr, run.stderr


def test_llmval_help_says_how_to_run_the_contract_and_check_inventory_says_what_it_takes(ops):
    top = ops.run("llmval", "--help").stdout
    assert "the contract itself runs under pytest" in top and "pytest -m smoke" in top, top
    check = ops.run("llmval", "check-inventory", "--help").stdout
    assert re.search(r"FILE\s+inventory TOML files", check), check


def test_a_run_piped_into_head_keeps_its_status_and_junit(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    piped = subprocess.run(f"{shlex.quote(str(repo.bin / 'python'))} -m pytest -v -m smoke --inventory=inventory.toml "
                           "--replay=rec | head -5",
                           shell=True, cwd=repo.path, capture_output=True, text=True, timeout=300)
    assert len(piped.stdout.splitlines()) == 5
    status = (repo.path / "reports" / "replay" / "status.md").read_text()
    assert "Verdict: **GREEN**" in status, status[:1000]
    assert ElementTree.parse(repo.path / "reports" / "junit.xml").getroot().find("testsuite") is not None


def test_xdist_leaks_no_benchmark_warning(ops, tmp_path):
    repo = ops.clone(tmp_path / "ops")
    # -m smoke deselects the perf baseline test only after pytest-benchmark saw its `benchmark` fixture
    run = _python_pytest(repo, "-n", "2", "--inventory=inventory.toml", "--replay=rec", "-m", "smoke")
    assert (repo.path / "reports" / "results.json").is_file(), _out(run)
    assert "PytestBenchmarkWarning" not in run.stdout + run.stderr and "Benchmarks are automatically disabled" \
        not in run.stdout + run.stderr, _out(run)
