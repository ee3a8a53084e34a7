"""Progress lines on pytest's terminal, shown while a test runs (not after it, when its capture ends).

    say = terminal_progress(config.pluginmanager)
    say("perf local-vllm: measuring C=1 ...")
    per_cell = terminal_progress(config.pluginmanager, min_verbosity=1)   # only with -v

Duck-typed over pytest's plugin manager (`terminalreporter`, `capturemanager`), so `llmval` stays free
of pytest imports; without a terminal reporter (e.g. `-p no:terminal`) the lines go nowhere.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any


def terminal_progress(pluginmanager: Any, *, min_verbosity: int = 0) -> Callable[[str], None]:
    """A function writing one line on the terminal now, with pytest's output capture suspended meanwhile;
    with `min_verbosity=1` only under `-v` (a line per grid cell would break pytest's line of dots); the default
    writes under `-q` too (launch and wait-ready progress is what a user watches)."""

    def say(line: str) -> None:
        reporter = pluginmanager.get_plugin("terminalreporter")
        if reporter is None or (min_verbosity > 0 and getattr(reporter, "verbosity", 0) < min_verbosity):
            return
        capture = pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.ensure_newline()
            reporter.write_line(line)

    return say
