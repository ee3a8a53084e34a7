"""Progress lines on pytest's terminal, shown while a test runs (not after it, when its capture ends).

    say = terminal_progress(config.pluginmanager)
    say("perf local-vllm: measuring C=1 ...")
    per_cell = terminal_progress(config.pluginmanager, min_verbosity=1)   # only with -v

Duck-typed over pytest's plugin manager (`terminalreporter`, `capturemanager`), so `llmval` stays free
of pytest imports; without a terminal reporter (e.g. `-p no:terminal`) the lines go nowhere.
"""

from __future__ import annotations

import contextlib
import os
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


class PipeSafe:
    """A terminal stream that survives its reader going away (`pytest ... | head`): after the first broken pipe
    its writes go to /dev/null, so the run still ends and writes its reports (a BrokenPipeError raised through
    pytest's hooks aborted the run and, caught as an OSError of the reports, removed the last status.md and
    junit.xml; issue 34.8). Everything else is the wrapped stream's."""

    def __init__(self, stream: Any):
        self._stream = stream
        self.broken = False

    def _gone(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError, ValueError, AttributeError):  # the interpreter's last flush finds no pipe
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
