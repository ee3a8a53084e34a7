"""The README's "Adding a host check" walk-through, done for real: its three blocks (the ECC fact with its
parser, the inventory field, the test) are applied to a copy of the repository; only those three files
differ, no existing command changes, and the new check runs on a replay and judges its answer.

The replay is REAL-h200x2 plus one SYNTHESIZED answer for the new command (GPU 1 with 2 uncorrected errors).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from llmval.hostfacts import COMMANDS
from selftest.strategies import ROOT

from ._contract import INVENTORIES, REPLAYS

SECTION_RE = re.compile(r"^## Adding a host check\n(?P<body>.*?)^## ", re.M | re.S)
STEP_RE = re.compile(r"^\d\. `(?P<path>[^`]+)`.*?\n\n```python\n(?P<code>.*?)```", re.M | re.S)
FIELD_ANCHOR = "    count: int = Field(ge=0, le=1024)\n"
COPIED = ("src", "fixtures", "tests", "conftest.py", "pyproject.toml")


def _walkthrough() -> dict[str, str]:
    section = SECTION_RE.search((ROOT / "README.md").read_text())
    assert section, "README.md has no '## Adding a host check' section"
    return {m["path"]: m["code"] for m in STEP_RE.finditer(section["body"])}


def _apply(repo: Path, steps: dict[str, str]) -> None:
    for path, code in steps.items():
        target = repo / path
        if target.exists():  # an existing module: the block is a field added to GpuSpec
            text = target.read_text()
            assert FIELD_ANCHOR in text
            target.write_text(text.replace(FIELD_ANCHOR, FIELD_ANCHOR + code, 1))
        else:
            target.write_text(code)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for name in COPIED for p in
            ([root / name] if (root / name).is_file() else (root / name).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def test_readme_walkthrough_adds_an_ecc_check_in_three_files(tmp_path):
    steps = _walkthrough()
    assert len(steps) == 3
    repo = tmp_path / "repo"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, repo / name)
    before = _files(repo)
    _apply(repo, steps)
    after = _files(repo)
    changed = sorted(p for p in after if before.get(p) != after[p])
    assert changed == sorted(steps) and len([p for p in changed if not p.startswith("tests/")]) <= 2

    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    probe = ("import json, llmval.hostfacts as h; "
             "print(json.dumps({n: c.template for n, c in h.COMMANDS.items()}))")
    commands = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, cwd=repo, check=True,
                                         capture_output=True, text=True).stdout)
    assert set(commands) - set(COMMANDS) == {"gpu-ecc"}
    assert {n: t for n, t in commands.items() if n != "gpu-ecc"} == {n: c.template for n, c in COMMANDS.items()}

    inventory = tmp_path / "h200x2-ecc.toml"
    inventory.write_text((INVENTORIES / "h200x2.toml").read_text()
                         .replace("[hosts.gpus]\n", "[hosts.gpus]\necc_uncorrected_max = 0\n", 1))
    replay = tmp_path / "replay"
    shutil.copytree(REPLAYS / "REAL-h200x2", replay)
    ecc = commands["gpu-ecc"]
    (replay / "commands-synth-ecc.jsonl").write_text(json.dumps({  # SYNTHESIZED: GPU 1 shows 2 errors
        "host": "h200", "command": ecc, "rc": 0, "stdout": "0, 0\n1, 2\n", "stderr": "", "duration_s": 0.1,
        "timed_out": False}) + "\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
                          "--reports", str(tmp_path / "reports"), "--inventory", str(inventory), "--replay",
                          str(replay), "tests/hosts"], env=env, cwd=repo, capture_output=True, text=True, timeout=300)
    tests = {t["nodeid"].split("::")[-1]: t for t in
             json.loads((tmp_path / "reports" / "results.json").read_text())["tests"]}
    verdict = tests["test_gpu_ecc_uncorrected_within_limit[h200]"]
    assert verdict["outcome"] == "failed", run.stdout[-3000:]
    assert "hosts.gpu.ecc_uncorrected" in verdict["message"] and "{1: 2}" in verdict["message"]
    failed = {n for n, t in tests.items() if t["outcome"] == "failed"}
    assert failed == {"test_gpu_ecc_uncorrected_within_limit[h200]", "test_no_stray_gpu_processes[h200]"}, \
        run.stdout[-3000:]  # the stray python3 is real (see REAL-h200x2's README)
