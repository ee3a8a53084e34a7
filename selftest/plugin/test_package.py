"""llmval used from another repository: the wheel built from this checkout, installed into a fresh environment,
runs the shipped contract in an empty folder holding only an inventory, and writes its reports there.

The fresh environment reuses the suite venv's third-party packages through a .pth line (no network, seconds);
llmval itself comes only from the wheel (the venv's editable install is not visible: its .pth is not processed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from selftest.strategies import ROOT

RECORDING = ROOT / "selftest" / "data" / "replays" / "hosts" / "SYNTHESIZED-kpro6-healthy"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with llmval installed from a wheel of this checkout: the path of its bin/ folder."""
    work = tmp_path_factory.mktemp("package")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(work / "dist"), str(ROOT)], check=True,
                   capture_output=True, timeout=240)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], check=True, capture_output=True, text=True).stdout.strip())
    (site / "suite-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next((work / "dist").glob("pytest_llmval-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--disable-pip-version-check", str(wheel)], check=True, capture_output=True,
                   timeout=240)
    return venv / "bin"


def test_the_console_script_lists_its_commands(installed):
    out = subprocess.run([str(installed / "llmval"), "--help"], capture_output=True, text=True, timeout=60).stdout
    for command in ("check-inventory", "schema", "init", "snapshot", "bench", "--version"):
        assert command in out
    version = subprocess.run([str(installed / "llmval"), "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("llmval 0."), version.stdout + version.stderr
    assert "/site-packages/llmval" in version.stdout


def test_pip_show_names_the_distribution_its_license_home_page_and_readme(installed):
    """The distribution is pytest-llmval (the index's `llmval` is someone else's); pip show carries a summary,
    license and home page (also for pip before 25.1, which reads only Home-page and License), the README is the
    long description, and the example inventories with their schema are in the wheel."""
    show = subprocess.run([sys.executable, "-m", "pip", "--python", str(installed / "python"), "show", "-f",
                           "pytest-llmval"], capture_output=True, text=True, timeout=120).stdout
    fields = dict(line.split(": ", 1) for line in show.splitlines() if ": " in line and not line.startswith(" "))
    assert fields["Name"] == "pytest-llmval" and fields["License"] == "MIT", show[:800]
    assert fields["Summary"].startswith("A pytest suite") and fields["Home-page"].startswith("https://"), show[:800]
    for shipped in ("llmval/inventories/inventory.schema.json", "llmval/inventories/kpro6.toml",
                    "llmval/templates/llmval-smoke@.service", "licenses/LICENSE"):
        assert shipped in show, shipped
    wheel = next((installed.parent.parent / "dist").glob("pytest_llmval-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "Description-Content-Type: text/markdown" in metadata and "# llmval — does the whole" in metadata


def test_an_empty_folder_with_an_inventory_runs_the_shipped_host_contract(installed, tmp_path):
    shutil.copy(ROOT / "inventories" / "kpro6.toml", tmp_path / "kpro6.toml")
    run = subprocess.run([str(installed / "python"), "-m", "pytest", "--inventory=kpro6.toml", "--replay",
                          str(RECORDING), "-m", "hosts", "-p", "no:cacheprovider"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    results = json.loads((tmp_path / "reports" / "results.json").read_text())
    paths = {t["nodeid"].split("::")[0] for t in results["tests"]}
    assert any(p.startswith("hosts/test_gpus.py") for p in paths), sorted(paths)
    assert "/site-packages/llmval/contract_tests/" in run.stdout  # the wheel's contract, not this checkout's
    assert (tmp_path / "reports" / "junit.xml").is_file() and (tmp_path / "reports" / "status.md").is_file()


def test_without_an_inventory_the_plugin_stays_out_of_other_tests(installed, tmp_path):
    (tmp_path / "test_theirs.py").write_text("def test_theirs():\n    assert 1 + 1 == 2\n")
    run = subprocess.run([str(installed / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-2000:]
    assert not (tmp_path / "reports").exists()


def test_the_contract_without_an_inventory_is_a_usage_error(installed, tmp_path):
    contract = subprocess.run([str(installed / "python"), "-c", "import importlib.util as u; "
                               "print(list(u.find_spec('llmval.contract_tests').submodule_search_locations)[0])"],
                              capture_output=True, text=True, timeout=60).stdout.strip()
    run = subprocess.run([str(installed / "python"), "-m", "pytest", "-p", "no:cacheprovider", contract],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 4 and "--inventory=PATH" in run.stderr, run.stdout[-1000:] + run.stderr[-1000:]
