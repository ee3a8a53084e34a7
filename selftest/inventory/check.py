"""`llmval check-inventory` run in this process: what the inventory fuzzers share."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from llmval.__main__ import main as llmval_main


def check_inventory(path: Path) -> tuple[int, str]:
    """`python -m llmval check-inventory PATH`, in-process: (exit code, stdout + stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = llmval_main(["check-inventory", str(path)])
    return code, out.getvalue()
