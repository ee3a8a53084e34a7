"""llmval used from an ops repo of its own, as a new user sets it up (issue 20, "Done means"; the repo:
selftest/plugin/opsrepo.py, `ops`): smoke is GREEN with every shipped smoke check collected, their testinfra test
passes in the same session (a test file of theirs with the basename of a contract file too), node ids printed in
the terminal, junit, results.json and status.md each run exactly that test when pasted back, one area is picked by
its `llmval/<area>` id or `--pyargs`, `--version`, `--markers` and `--fixtures` work without an inventory, and
other suites in that venv see no llmval, no pytest-benchmark header and no `.benchmarks/`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from selftest.plugin.opsrepo import FP8_KV, OpsRepo
from selftest.strategies import ROOT

pytestmark = pytest.mark.subprocess  # a wheel built and installed, pytest and llmval run from it


@pytest.fixture(scope="module")
def smoke(ops: OpsRepo) -> subprocess.CompletedProcess:
    """The smoke run from the ops repo, -rA so the terminal prints each test's node id."""
    return ops.pytest("-m", "smoke", "-rA")


def _shipped_smoke_checks() -> set[str]:
    """The smoke checks of this checkout's contract on the kpro6 inventory, as `<area>/<file>::<test>`."""
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "smoke",
                             "--inventory", "inventories/kpro6.toml", "-p", "no:cacheprovider"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120).stdout
    return {line.removeprefix("tests/") for line in listed.splitlines() if line.startswith("tests/")}


def test_smoke_is_green_with_every_shipped_smoke_check_and_their_testinfra_tests(ops, smoke):
    assert smoke.returncode == 0, smoke.stdout[-3000:] + smoke.stderr[-2000:]
    assert "Verdict: **GREEN**" in (ops.path / "reports" / "replay" / "status.md").read_text()  # a replay's
    results = json.loads((ops.path / "reports" / "results.json").read_text())
    ids = {t["nodeid"]: t["outcome"] for t in results["tests"]}
    contract = {i.removeprefix("llmval/") for i in ids if i.startswith("llmval/")}
    assert contract == _shipped_smoke_checks(), sorted(contract ^ _shipped_smoke_checks())
    assert ids["tests/test_theirs.py::test_passwd_belongs_to_root[local]"] == "passed"  # testinfra's own host
    assert ids["tests/test_gpus.py::test_a_shell_is_there[local]"] == "passed"  # beside llmval/hosts/test_gpus.py
    assert ids["llmval/hosts/test_gpus.py::test_gpu_count_matches_inventory[kpro6-ct129]"] == "passed"
    assert "benchmark: " not in smoke.stdout and not (ops.path / ".benchmarks").exists()


def _pasted(ops: OpsRepo, nodeid: str, *more: str) -> dict[str, str]:
    run = ops.pytest(nodeid, *more)
    assert run.returncode in (0, 1), run.stdout[-2000:] + run.stderr[-1000:]
    return {t["nodeid"]: t["outcome"] for t in json.loads((ops.path / "reports" / "results.json").read_text())["tests"]}


def test_node_ids_from_the_terminal_junit_and_results_run_that_test_when_pasted_back(ops, smoke):
    printed = re.search(r"^PASSED (llmval/hosts/test_nccl\.py::\S+)$", smoke.stdout, re.MULTILINE)
    assert printed, smoke.stdout[-3000:]
    case = next(c for c in ElementTree.parse(ops.path / "reports" / "junit.xml").iter("testcase")
                if c.get("classname") == "llmval.serving.test_model")
    from_junit = f"{case.get('classname').replace('.', '/')}.py::{case.get('name')}"
    for nodeid in (printed.group(1), from_junit):
        assert _pasted(ops, nodeid) == {nodeid: "passed"}
    function = printed.group(1).split("[")[0]  # `file::test`: every parametrization of it, as pytest does
    assert set(_pasted(ops, function)) == {printed.group(1)}


def test_the_id_status_md_names_for_a_failure_runs_that_test(ops, tmp_path):
    shutil.copytree(ops.path / "rec", tmp_path / "rec")
    for part in (tmp_path / "rec").glob("*synth[01].jsonl"):  # the serving half: the FP8-KV deployment instead
        part.unlink()
    for part in FP8_KV.glob("*.jsonl"):
        shutil.copy(part, tmp_path / "rec" / part.name)
    shutil.copy(ops.path / "inventory.toml", tmp_path / "inventory.toml")
    red = ops.pytest("-m", "smoke", cwd=tmp_path)
    assert red.returncode == 1, red.stdout[-2000:]
    status = (tmp_path / "reports" / "replay" / "status.md").read_text()
    named = re.search(r"test: `(llmval/serving/[^`]+)`", status)
    assert named, status[:3000]
    again = ops.pytest(named.group(1), cwd=tmp_path)
    outcomes = {t["nodeid"]: t["outcome"]
                for t in json.loads((tmp_path / "reports" / "results.json").read_text())["tests"]}
    assert again.returncode == 1 and outcomes == {named.group(1): "failed"}, again.stdout[-2000:]


def test_one_area_by_its_id_or_by_pyargs(ops):
    for selection in (["llmval/hosts"], ["--pyargs", "llmval.contract_tests.hosts"]):
        run = ops.pytest(*selection, "--collect-only", "-q")
        ids = [line for line in run.stdout.splitlines() if "::" in line]
        assert run.returncode == 0 and ids and all(i.startswith("llmval/hosts/") for i in ids), run.stdout[-2000:]
    unknown = ops.pytest("llmval/hosts/test_gpus.py::test_no_such_check")
    assert unknown.returncode == 4 and "not found in the llmval contract" in unknown.stderr, unknown.stderr


def test_the_venv_elsewhere_runs_the_same_contract(ops, tmp_path):
    """The same install, pytest started from a folder outside the repo (the venv is not inside it)."""
    shutil.copy(ops.path / "inventory.toml", tmp_path / "inventory.toml")
    shutil.copytree(ops.path / "rec", tmp_path / "rec")
    run = ops.pytest("-m", "hosts", "-q", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:]
    ids = [t["nodeid"] for t in json.loads((tmp_path / "reports" / "results.json").read_text())["tests"]]
    assert "llmval/hosts/test_gpus.py::test_gpu_count_matches_inventory[kpro6-ct129]" in ids


def test_console_script_version_and_pip_show(ops):
    """The distribution is pytest-llmval (the index's `llmval` is someone else's); pip show carries a summary,
    license and home page (also for pip before 25.1, which reads only Home-page and License), the README is the
    long description, and the example inventories with their schema are in the wheel."""
    out = ops.run("llmval", "--help").stdout
    for command in ("check-inventory", "schema", "init", "snapshot", "bench", "--version"):
        assert command in out
    version = ops.run("llmval", "--version")
    assert version.returncode == 0 and version.stdout.startswith("llmval 0."), version.stdout + version.stderr
    assert "/.venv/lib/" in version.stdout and version.stdout.count("\n") == 1  # the wheel's, one line
    show = ops.run("pip", "show", "-f", "pytest-llmval").stdout
    fields = dict(line.split(": ", 1) for line in show.splitlines() if ": " in line and not line.startswith(" "))
    assert fields["Name"] == "pytest-llmval" and fields["License"] == "MIT", show[:800]
    assert fields["Summary"].startswith("A pytest suite") and fields["Home-page"].startswith("https://"), show[:800]
    for shipped in ("llmval/inventories/inventory.schema.json", "llmval/inventories/kpro6.toml",
                    "llmval/templates/llmval-smoke@.service", "licenses/LICENSE"):
        assert shipped in show, shipped
    with zipfile.ZipFile(ops.wheel) as archive:
        metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "Description-Content-Type: text/markdown" in metadata and "# llmval — does the whole" in metadata


def test_a_bad_inventory_names_a_schema_file_that_exists(ops, tmp_path):
    (tmp_path / "bad.toml").write_text((ops.path / "inventory.toml").read_text() + "\n[typo_section]\nx = 1\n")
    run = ops.run("llmval", "check-inventory", str(tmp_path / "bad.toml"))
    named = re.search(r"see (\S+\.json)\)", run.stderr)
    assert run.returncode == 4 and named and Path(named.group(1)).is_file(), run.stderr


def test_without_an_inventory_markers_fixtures_and_other_suites_see_no_llmval(ops, tmp_path):
    markers = ops.run("python", "-m", "pytest", "--markers", "-p", "no:cacheprovider")
    assert markers.returncode == 0 and "@pytest.mark.inventory_hosts" in markers.stdout, markers.stderr[-1000:]
    fixtures = ops.run("python", "-m", "pytest", "--fixtures", "-p", "no:cacheprovider")
    assert fixtures.returncode == 0 and "inventory [session scope]" in fixtures.stdout, fixtures.stderr[-1000:]
    (tmp_path / "test_theirs.py").write_text("def test_theirs():\n    assert 1 + 1 == 2\n")
    run = ops.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-2000:]
    assert "benchmark: " not in run.stdout
    assert not (tmp_path / "reports").exists() and not (tmp_path / ".benchmarks").exists()


def test_the_contract_without_an_inventory_is_a_usage_error(ops, tmp_path):
    run = ops.run("python", "-m", "pytest", "-p", "no:cacheprovider", "llmval/hosts", cwd=tmp_path)
    assert run.returncode == 4 and "--inventory=PATH" in run.stderr, run.stdout[-1000:] + run.stderr[-1000:]
