"""Walk-throughs done for real: apply the documented steps for a change (a page of the docs site, docs/) to a copy
of the repository, run on the copy what CI runs for that change, and count the files the steps touched.

A copy holds what a fresh clone of this checkout would hold, as it is on disk now (tracked and untracked files
that git does not ignore). It imports its own `src/` (`PYTHONPATH`); the pytest wiring (`fixtures/`, the
`llmval.pytest_plugin` entry point) comes from the checkout's install, which is why a walk-through checks that
its steps leave `fixtures/` alone.

    repo = copy_repo(tmp_path)
    before = snapshot(repo)
    ... apply the steps ...
    touched(before, snapshot(repo))   # {"src/llmval/hostfacts/gpu_ecc.py", ...}
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from selftest.strategies import ROOT

DOCS = ROOT / "docs"
ITEM_RE = re.compile(r"^\d+\. (?P<item>.*?)(?=^\d+\. |\Z)", re.M | re.S)
HEAD_RE = re.compile(r"`(?P<target>[^`]+)`")
# a fenced block, at the margin or indented under its list item (the indent is taken off its lines)
BLOCK_RE = re.compile(r"^(?P<indent> *)```(?P<lang>\w*)\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)


@dataclass(frozen=True)
class Step:
    """One numbered documented step: a file and the block written to it (a `diff` block: the change applied to it),
    or (no block) a command to run."""

    target: str
    code: str | None
    lang: str = ""

    @property
    def is_patch(self) -> bool:
        return self.lang == "diff"

    @property
    def is_command(self) -> bool:
        return self.code is None


def documented_section(title: str) -> tuple[Path, str]:
    """The page of docs/ that holds the heading `title` (at any level, exactly once in the site) and the text under
    it, up to the next heading below the page title: the walk-throughs follow the pages wherever they put a
    section."""
    heading = re.compile(rf"^#+ {re.escape(title)}\n(?P<body>.*?)(?=^##+ |\Z)", re.M | re.S)
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text()
        if match := heading.search(_prose(text)):  # found in the prose, cut from the page (same offsets)
            found.append((page, text[match.start("body"):match.end("body")]))
    assert len(found) == 1, f"docs/ has {len(found)} sections titled {title!r} (one expected): {[p for p, _ in found]}"
    return found[0]


def _prose(text: str) -> str:
    """The page with its fenced blocks blanked (same length), so a `# comment` in a code block is never a heading."""
    return BLOCK_RE.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), text)


def documented_steps(title: str) -> list[Step]:
    """The numbered steps of the docs section titled `title` (see documented_section)."""
    page, body = documented_section(title)
    steps = []
    for item in ITEM_RE.finditer(body):
        head = HEAD_RE.search(item["item"])
        assert head, f"{page.relative_to(ROOT)} '{title}': a step names no file or command: {item['item'][:80]!r}"
        block = BLOCK_RE.search(item["item"])
        code = _dedent(block["code"], block["indent"]) if block else None
        steps.append(Step(head["target"], code, block["lang"] if block else ""))
    return steps


def _dedent(code: str, indent: str) -> str:
    """A block's lines without the indent of its fence (blank lines stay blank)."""
    return "".join(line[len(indent):] if line.startswith(indent) else line.lstrip(" ")
                   for line in code.splitlines(keepends=True))


def _copied_files(root: Path) -> list[str]:
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            check=True, capture_output=True).stdout.decode()
    return sorted({p for p in listed.split("\0") if p and (root / p).is_file() and not (root / p).is_symlink()})


def copy_repo(tmp_path: Path) -> Path:
    """A copy of the checkout's files (what a clone would hold, as they are on disk) under `tmp_path/repo`."""
    repo = tmp_path / "repo"
    for name in _copied_files(ROOT):
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return repo


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of the copy (byte contents), caches left out."""
    return {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts}


def touched(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    """Files added, changed or removed between two snapshots."""
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def env_of(repo: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(repo / "src")}


@dataclass
class Ran:
    """A finished command on the copy."""

    args: list[str]
    rc: int
    output: str
    wall_s: float

    def tail(self, n: int = 4000) -> str:
        return f"$ {' '.join(self.args)}  (exit {self.rc}, {self.wall_s:.1f} s)\n{self.output[-n:]}"


def run_in(repo: Path, *args: str, timeout_s: float = 300) -> Ran:
    """Run a command in the copy with the copy's `src/` first on the import path."""
    start = time.monotonic()
    done = subprocess.run(list(args), cwd=repo, env=env_of(repo), capture_output=True, text=True, timeout=timeout_s)
    return Ran(list(args), done.returncode, done.stdout + done.stderr, time.monotonic() - start)


def pytest_in(repo: Path, *args: str, timeout_s: float = 300) -> Ran:
    """`python -m pytest ARGS` in the copy, as CI runs it (one process, no cache)."""
    return run_in(repo, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", *args,
                  timeout_s=timeout_s)


def make_in(repo: Path, target: str) -> Ran:
    """`make TARGET` in the copy, with this interpreter as the venv's python. `-o .venv/.ready`: the copy has no venv
    of its own and must never build one (nor reinstall the checkout's)."""
    return run_in(repo, "make", "--no-print-directory", "-o", ".venv/.ready", target, f"PY={sys.executable}")


def apply_patch(repo: Path, step: Step) -> Ran:
    """`git apply` the step's diff in the copy (outside any git repository it works as `patch` does)."""
    start = time.monotonic()
    done = subprocess.run(["git", "apply", "--verbose", "-"], cwd=repo, input=step.code, capture_output=True,
                          text=True, timeout=60)
    return Ran(["git", "apply", step.target], done.returncode, done.stdout + done.stderr, time.monotonic() - start)
