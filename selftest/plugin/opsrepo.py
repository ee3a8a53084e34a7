"""The fresh ops repo of a new user, shared by the self-tests that use llmval installed (test_package.py,
test_first_day.py): the wheel built from this checkout installed into a venv *inside* an empty repo (`python3 -m
venv .venv && .venv/bin/pip install <wheel>`), `llmval init` run there, the kpro6 inventory as theirs, the kpro6
host and serving recordings as the recording of one run, and two testinfra tests of the team's own.

Offline: pip installs only the wheel (`--no-index --no-deps`); the third-party packages come from the suite's
venv through a .pth line written after that install (llmval itself comes only from the wheel: the suite's
editable install is not visible, its .pth is not processed); pytest runs as `.venv/bin/python -m pytest`, since
its console script stays in the suite's venv. Building it takes about a minute on two shared cores: once per
session (`ops`, selftest/plugin/conftest.py)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from selftest.strategies import ROOT

REPLAYS = ROOT / "selftest" / "data" / "replays"
ONE_RUN = [REPLAYS / "hosts" / "SYNTHESIZED-kpro6-healthy", REPLAYS / "SYNTHESIZED-kpro6-sglang-healthy"]
"""The kpro6 host recording and the serving recording: one folder holding both is the recording of one run."""
FP8_KV = REPLAYS / "SYNTHESIZED-kpro6-sglang-fp8-kv"

THEIR_TESTINFRA_TEST = '''"""The ops team's own testinfra test as it was before llmval (only the smoke marker added)."""
import pytest

pytestmark = pytest.mark.smoke


def test_passwd_belongs_to_root(host):
    passwd = host.file("/etc/passwd")
    assert passwd.is_file and passwd.user == "root"
'''
THEIR_SAME_BASENAME = '''import pytest

pytestmark = pytest.mark.smoke


def test_a_shell_is_there(host):
    assert host.exists("sh")
'''


@dataclasses.dataclass(frozen=True)
class OpsRepo:
    path: Path
    wheel: Path
    venv: Path | None = None
    """The venv when it is not the repo's own `.venv` (a copy of the repo, `clone`)."""

    @property
    def bin(self) -> Path:
        return (self.venv or self.path / ".venv") / "bin"

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin / args[0]), *args[1:]], cwd=cwd or self.path, capture_output=True,
                              text=True, timeout=timeout)

    def pytest(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return self.run("python", "-m", "pytest", "--inventory=inventory.toml", "--replay", "rec", *args, cwd=cwd)

    def clone(self, folder: Path) -> OpsRepo:
        """A copy of the repo's files in `folder` (not its venv: the copy runs this one's), to change freely."""
        shutil.copytree(self.path, folder, ignore=shutil.ignore_patterns(".venv", "reports", ".benchmarks"))
        return OpsRepo(folder, self.wheel, self.bin.parent)


def build_ops_repo(work: Path) -> OpsRepo:
    """The ops repo under `work` (module docstring)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(work / "dist"), str(ROOT)], check=True,
                   capture_output=True, timeout=240)
    wheel = next((work / "dist").glob("pytest_llmval-*.whl"))
    repo = work / "ops"
    repo.mkdir()
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=repo, check=True, timeout=120)
    subprocess.run([".venv/bin/pip", "install", "-q", "--no-index", "--no-deps", "--disable-pip-version-check",
                    str(wheel)], cwd=repo, check=True, capture_output=True, timeout=240)
    site = Path(subprocess.run([".venv/bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               cwd=repo, check=True, capture_output=True, text=True).stdout.strip())
    (site / "zz-suite-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    ops = OpsRepo(repo, wheel)
    init = ops.run("llmval", "init", ".", "--engine", "sglang")
    assert init.returncode == 0, init.stderr
    shutil.copy(ROOT / "inventories" / "kpro6.toml", repo / "inventory.toml")  # their real inventory
    (repo / "rec").mkdir()
    for recording in ONE_RUN:
        for part in recording.glob("*.jsonl"):
            shutil.copy(part, repo / "rec" / part.name)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_theirs.py").write_text(THEIR_TESTINFRA_TEST)
    (repo / "tests" / "test_gpus.py").write_text(THEIR_SAME_BASENAME)
    return ops
