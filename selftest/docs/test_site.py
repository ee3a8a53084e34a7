"""The docs site (docs/, mkdocs.yml) and the README's links into it cannot rot.

`mkdocs build --strict` fails on a link to a missing page or anchor and on a page left out of the nav; the README is
outside the site, so its links are checked here against the built pages' anchors. The repository paths and
`llmval.` names the pages cite must exist (docs/HELPERS.md named root-level errors.py, stack.py and results.py
for months after they moved). mkdocs comes with the dev extra (`make selftest` installs it): without it the build
fails in CI and skips elsewhere, saying so.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from selftest.strategies import ROOT
from selftest.walkthrough import documented_section, documented_steps

PAGES = sorted((ROOT / "docs").rglob("*.md"))
LINK_RE = re.compile(r"\]\((?P<target>[^)\s]+)\)")
CODE_RE = re.compile(r"`(?P<text>[^`\n]+)`")
REPO_PATH_RE = re.compile(r"^(?:src|selftest|tests|fixtures|scripts|inventories|contrib|\.github|\.ci|docs)/"
                          r"[\w./@{},<>-]*$")
DOTTED_RE = re.compile(r"^llmval(?:\.\w+)+$")
# the walk-throughs' files: what their steps create, so they do not exist before the steps are done
WALKTHROUGHS = {"Adding a host check": 5, "Adding a serving check": 3, "Adding an engine": 3,
                "Adding a report section": 2}
NOT_HERE = {"src/llmval/hostfacts/gpu_ecc.py", "tests/hosts/test_gpu_ecc.py", "src/llmval/engines/trtllm.py",
            "selftest/engines/test_trtllm.py", "selftest/data/hostfacts/SYNTHESIZED-gpu-ecc/commands-synth.jsonl",
            "tests/serving/test_engine_version.py",
            "tests/test_gpus.py"}  # ... and an ops repo's own test (docs/ops.md: no collision with the contract's)
# the installed names of the checkout's folders (setup.py's package_dir)
INSTALLED_AS = {"llmval.contract_tests": "tests", "llmval.pytest_plugin": "fixtures"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built in this process, as `mkdocs build --strict` builds it (a warning aborts the build)."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        message = "mkdocs or mkdocs-material is not installed: `.venv/bin/pip install -e '.[dev]'` (make setup does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    out = tmp_path_factory.mktemp("site")
    said = _Said()
    logging.getLogger("mkdocs").addHandler(said)
    try:
        build(load_config(str(ROOT / "mkdocs.yml"), strict=True, site_dir=str(out)))
    except Abort as aborted:
        pytest.fail(f"mkdocs build --strict: {aborted}\n" + "\n".join(said.lines))
    finally:
        logging.getLogger("mkdocs").removeHandler(said)
    return out


class _Said(logging.Handler):
    """What mkdocs warned about, for the failure message."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname}: {record.getMessage()}")


def _anchors(site: Path, page: str) -> set[str]:
    html = site / (page.removesuffix(".md").removesuffix("index") or "") / "index.html"
    assert html.is_file(), f"no built page for {page} ({html})"
    return set(re.findall(r'\bid="([^"]+)"', html.read_text()))


RAW_TABLE_RE = re.compile(r"<p>\s*\|[^<]*")
"""A paragraph that starts with `|`: table rows Markdown did not take for a table (a blank line inside a table ends
it, and the rows after it render as text). mkdocs --strict says nothing of it."""


def test_no_page_shows_a_table_as_raw_pipes(site):
    raw = {str(page.relative_to(site)): found[:80] for page in site.rglob("*.html")
           if (found := next(iter(RAW_TABLE_RE.findall(page.read_text())), None))}
    assert not raw, f"table rows rendered as text (a blank line inside a table?): {raw}"


def worked_example(title: str = "A worked example: kpro6") -> str:
    """The TOML of a docs/inventory.md walk-through: its ```toml blocks, in order, as one file."""
    text = (ROOT / "docs" / "inventory.md").read_text()
    section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```toml\n(.*?)```", section, re.S))


@pytest.mark.subprocess
def test_the_worked_kpro6_inventory_passes_check_inventory_and_collects(tmp_path):
    """docs/inventory.md's kpro6 walk-through is one inventory: `llmval check-inventory` takes it and the contract
    collects on it, its ids naming its hosts and endpoint (issue 46.5)."""
    inventory = tmp_path / "inventory.toml"
    inventory.write_text(worked_example())
    check = subprocess.run([sys.executable, "-m", "llmval", "check-inventory", str(inventory)], capture_output=True,
                           text=True, timeout=120)
    assert check.returncode == 0 and "ok (2 hosts, 1 endpoints)" in check.stdout, check.stdout + check.stderr
    collect = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              f"--inventory={inventory}", "-m", "smoke"], cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
    ids = [line for line in collect.stdout.splitlines() if "::" in line]
    assert collect.returncode == 0, collect.stdout[-3000:] + collect.stderr[-2000:]
    for target in ("[kpro6]", "[kpro6-ct129]", "[kpro6-sglang]", "[kpro6-sglang-algorithm]"):
        assert any(target in i for i in ids), (target, ids[:20])


def test_the_site_builds_with_strict_links_and_anchors(site):
    assert (site / "index.html").is_file() and (site / "adding-a-host-check" / "index.html").is_file()


def test_every_link_of_the_readme_reaches_a_file_and_its_anchor(site):
    readme = (ROOT / "README.md").read_text()
    links = [m["target"] for m in LINK_RE.finditer(readme) if "://" not in m["target"]]
    assert len(links) >= 10, links  # the README points into the site
    for link in links:
        path, _, anchor = link.partition("#")
        assert (ROOT / path).is_file(), f"README links to {path}, which does not exist"
        if anchor:
            assert path.startswith("docs/"), f"README: anchor on a file outside the site: {link}"
            assert anchor in _anchors(site, path.removeprefix("docs/")), f"README: {path} has no anchor #{anchor}"


def test_the_walkthrough_sections_are_where_their_anchors_say(site):
    for title, files in WALKTHROUGHS.items():
        page, _ = documented_section(title)
        slug = re.sub(r"[^\w\s-]", "", title.lower()).strip().replace(" ", "-")
        assert slug in _anchors(site, str(page.relative_to(ROOT / "docs"))), (title, page)
        assert len(documented_steps(title)) == files, title


@pytest.mark.parametrize("page", [*PAGES, ROOT / "README.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_and_llmval_name_a_page_cites_exists(page):
    missing = []
    for match in CODE_RE.finditer(page.read_text()):
        text = match["text"].split("::")[0].rstrip(",:")
        if REPO_PATH_RE.match(text) and text not in NOT_HERE:
            if not any(ROOT.glob(_as_glob(text))):
                missing.append(text)
        elif DOTTED_RE.match(text) and not _resolves(text):
            missing.append(text)
    assert not missing, f"{page.relative_to(ROOT)} cites what does not exist: {missing}"


def _as_glob(path: str) -> str:
    """`contrib/systemd/llmval-smoke.{service,timer}` and `reports/perf-<label>.png` shapes as a glob."""
    return re.sub(r"\{[^}]*\}|<[^>]*>", "*", path).rstrip("/")


def _resolves(name: str) -> bool:
    """`llmval.a.b.C` is a module or an attribute of one."""
    for package, folder in INSTALLED_AS.items():
        if name == package or name.startswith(package + "."):
            rest = name.removeprefix(package).strip(".").replace(".", "/")
            return (ROOT / folder / rest).is_dir() or (ROOT / folder / f"{rest}.py").is_file()
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False
