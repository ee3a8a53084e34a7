"""The layers of src/llmval/ are kept, not only written (issue 33.1): pyproject.toml's `[tool.importlinter]` declares
them once, `lint-imports` checks them (make selftest runs it, so CI does), and no import circle hides anywhere.

An import is every `import` statement, wherever it stands: at module level, inside a function (the lazy import that
"breaks" a circle at run time) or under `if TYPE_CHECKING:` (a circle of types is a circle). `import_graph` below
reads all of them with ast, independently of import-linter's own graph, and counts the circles between modules and
between the packages of llmval; the contract itself is checked to ignore nothing, and lint-imports is shown to
refuse a function-level and a TYPE_CHECKING import that cross a layer upwards.
"""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from selftest.strategies import ROOT

SRC = ROOT / "src"
PACKAGE = SRC / "llmval"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def modules(src: Path) -> dict[str, Path]:
    """Every module of the packages under `src`, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(src: Path, root: str = "llmval") -> dict[str, dict[str, int]]:
    """module -> {imported module of `root`: line}, for every import statement in the module's whole tree."""
    known = modules(src)
    graph: dict[str, dict[str, int]] = defaultdict(dict)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, node.module] if node.module else base)
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] != root:
                    continue
                while target not in known and "." in target:
                    target = target.rpartition(".")[0]
                if target != name:
                    graph[name].setdefault(target, node.lineno)
    return graph


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative): each one is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    nodes = sorted(set(edges) | {b for bs in edges.values() for b in bs})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def module_circles(src: Path) -> list[list[str]]:
    return circles({a: set(bs) for a, bs in import_graph(src).items()})


def package_circles(src: Path) -> list[list[str]]:
    """Circles between the packages of llmval (llmval.X), each package its modules together."""
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])
    edges: dict[str, set[str]] = defaultdict(set)
    for a, bs in import_graph(src).items():
        edges[package(a)] |= {package(b) for b in bs if package(b) != package(a)}
    return circles(edges)


def test_no_import_circle_counting_function_level_and_type_checking_imports():
    assert module_circles(SRC) == []
    assert package_circles(SRC) == []


CIRCLE = {
    "llmval/__init__.py": "",
    "llmval/low/__init__.py": "",
    "llmval/low/model.py": "def late():\n    from ..high.policy import RULE\n    return RULE\n",
    "llmval/low/types.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high import policy\n",
    "llmval/high/__init__.py": "",
    "llmval/high/policy.py": "from ..low.model import late\nfrom ..low import types\nRULE = 1\n",
}


def test_the_counter_sees_imports_inside_functions_and_under_type_checking(tmp_path):
    for path, text in CIRCLE.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert import_graph(tmp_path)["llmval.low.model"] == {"llmval.high.policy": 2}
    assert import_graph(tmp_path)["llmval.low.types"] == {"llmval.high.policy": 3}
    assert module_circles(tmp_path) == [["llmval.high.policy", "llmval.low.model", "llmval.low.types"]]
    assert package_circles(tmp_path) == [["llmval.high", "llmval.low"]]


def _contract() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def test_the_contract_ignores_nothing_and_places_every_package():
    """Every package of llmval sits in a layer (a new one must be placed), no import is ignored anywhere, and
    TYPE_CHECKING imports count."""
    contract = _contract()
    assert contract["root_package"] == "llmval" and contract["exclude_type_checking_imports"] is False
    assert all("ignore_imports" not in c for c in contract["contracts"]), "the contract ignores no import"
    (layers,) = [c for c in contract["contracts"] if c["type"] == "layers"]
    placed = [name.strip() for layer in layers["layers"] for name in layer.replace(":", "|").split("|")]
    children = sorted(p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
                      if (p.is_dir() and (p / "__init__.py").exists())
                      or (p.suffix == ".py" and not p.name.startswith("__")))
    unplaced = sorted(set(children) - set(placed))
    assert sorted(placed) == children, f"place every package of llmval in a layer of pyproject.toml: {unplaced}"


def test_what_another_package_imports_from_a_package_is_in_its_all():
    """No reaching into another package's private modules (the `private_modules` contract refuses
    `from ..load._lock import ...`), and what is imported from a package instead is its public API: named in
    that package's `__all__` (issue 33.4)."""
    known = modules(SRC)
    unlisted = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
            if module.count(".") != 1 or module.split(".")[:2] == name.split(".")[:2]:
                continue  # only another package's own namespace (llmval.X), imported from outside it
            exported = getattr(importlib.import_module(module), "__all__", ())
            unlisted += [f"{name}:{node.lineno}: {module}.{alias.name}" for alias in node.names
                         if alias.name not in exported and f"{module}.{alias.name}" not in known]
    assert unlisted == []


def _lint_imports(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                          cwd=src.parent, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def lint_imports():
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} missing: import-linter is in the dev extra (pip install -e '.[dev]')")
    return _lint_imports


@pytest.mark.subprocess
def test_lint_imports_keeps_every_contract(lint_imports):
    checked = lint_imports(SRC)
    assert checked.returncode == 0 and " 0 broken" in checked.stdout, checked.stdout[-3000:] + checked.stderr


@pytest.mark.slow  # a copy of src/ and a lint-imports run per case
@pytest.mark.parametrize(("module", "line"), [
    ("inventory/_base.py", "\n\ndef _late():\n    from ..engines import ADAPTERS\n    return ADAPTERS\n"),
    ("io/answers.py", "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..hostfacts import HostFacts\n"),
], ids=["function-level", "type-checking"])
def test_lint_imports_refuses_an_upward_import_wherever_it_stands(lint_imports, tmp_path, module, line):
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    with (copy / "llmval" / module).open("a") as source:
        source.write(line)
    checked = lint_imports(copy)
    assert checked.returncode == 1 and "layers: a package imports only the layers below it BROKEN" in checked.stdout, \
        checked.stdout[-3000:] + checked.stderr
