"""Run the serving smoke contract against a HostileServer, in a subprocess, and collect what it wrote and said.

    run = run_contract(server, tmp_path, endpoint={"request_timeout_s": 600}, env={"KEY": "..."})
    run.rc, run.elapsed_s, run.terminal, run.files   # files: every file under the reports folder, as text

`leaks(text, secret)` is the secrets law of issue 23.1: no 8 characters that begin or end the secret (in any
encoded form) and no 15 in a row of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from llmval.core.contract import encoded_forms
from selftest.strategies import ROOT

INVENTORY = """
[deployment]
name = "hostile"
kind = "lab"

[[hosts]]
name = "localhost"
platform = "local"
transport = {{ kind = "local" }}

[[endpoints]]
name = "hostile"
platform = "local"
base_url = "{base_url}"
engine = "{engine}"
model = "smollm2"
max_model_len = 8192
host = "localhost"
{endpoint}
"""
API_KEY_ENV = "LLMVAL_HOSTILE_KEY"
KEY = "Zq7xW2mK9pL4vR8tN3bH6jD1fS5gA0cYeUiOoP7Q"  # 40 characters, no shape redact() knows (sk-, hf_)
"""A name that does not look secret: only the inventory's api_key_env marks its value."""


@dataclass
class Run:
    rc: int
    elapsed_s: float
    terminal: str
    files: dict[str, str] = field(default_factory=dict)

    def everything(self) -> dict[str, str]:
        return {"terminal": self.terminal, **self.files}


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):  # an inline table: expect = { speculative = { num_steps = 2 } }
        return "{ " + ", ".join(f"{key} = {toml_value(item)}" for key, item in value.items()) + " }"
    return repr(value)


def write_inventory(folder: Path, base_url: str, endpoint: dict | None = None, extra: str = "") -> Path:
    """The inventory of one endpoint at `base_url` (its `endpoint` keys added; `engine` replaces its "vllm"), then
    the TOML of `extra` (sections such as a `[[niah]]` grid)."""
    keys = dict(endpoint or {})
    engine = keys.pop("engine", "vllm")
    lines = "\n".join(f"{key} = {toml_value(value)}" for key, value in keys.items())
    path = folder / "hostile.toml"
    text = INVENTORY.format(base_url=base_url, endpoint=lines, engine=engine)
    path.write_text(text + ("\n" + extra if extra else ""))
    return path


def run_contract(server, folder: Path, *, endpoint: dict | None = None, env: dict | None = None,
                 args: tuple[str, ...] = ("-m", "smoke"), paths: tuple[str, ...] = ("tests/serving",),
                 timeout_s: float = 120, extra: str = "") -> Run:
    """The contract's `paths` against `server` (reports into folder/reports); killed at `timeout_s`."""
    inventory = write_inventory(folder, server.base_url, endpoint, extra)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LLMVAL_"))}
    environ.update(env or {})
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(ROOT),
             "-c", str(ROOT / "pyproject.toml"), *[str(ROOT / p) for p in paths], "--inventory", str(inventory),
             "--reports", str(folder / "reports"), "-rA", *args],
            cwd=folder, env=environ, capture_output=True, text=True, timeout=timeout_s, errors="replace")
        rc, terminal = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        rc = -9
        said = [expired.stdout or "", expired.stderr or ""]
        terminal = "".join(s.decode("utf-8", "replace") if isinstance(s, bytes) else s for s in said)
    elapsed = time.monotonic() - started
    reports = folder / "reports"
    files = {str(p.relative_to(folder)): p.read_bytes().decode("utf-8", "replace")
             for p in sorted(reports.rglob("*")) if p.is_file()} if reports.is_dir() else {}
    return Run(rc, elapsed, terminal, files)


def fragments(secret: str) -> list[str]:
    """What must not appear: each form's first and last 8 characters, and every 15 in a row of it."""
    found = set()
    for form in encoded_forms(secret):
        if len(form) < 8:
            continue
        found.update({form[:8], form[-8:]})
        found.update(form[i:i + 15] for i in range(0, max(0, len(form) - 14)))
    return sorted(found)


def leaks(texts: dict[str, str], secret: str) -> list[tuple[str, str]]:
    """(where, fragment) for each place a fragment of `secret` appears."""
    parts = fragments(secret)
    return [(where, part) for where, text in texts.items() for part in parts if part in text]
