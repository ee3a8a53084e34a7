"""The exit status of a contract run: what kind of not-green it was, so CI can act on it.

    0  GREEN            every check that ran held, something was checked, every declared fact was judged
    1  CONTRACT_BROKEN  the deployment broke the contract (a failed check, a lifted blocker)
    2  INTERRUPTED      pytest's: interrupted, or tests failed to collect (e.g. a `needs(...)` typo)
    3  INTERNAL_ERROR   pytest's: a bug in the suite
    4  USAGE            pytest's: bad inventory or bad options (the message names file, key path, reason)
    5  NOTHING_CHECKED  no test judged anything: all skipped, all deselected, or none collected (pytest's 5,
                        widened)
    6  MAX_WARNINGS     pytest's: more warnings than --max-warnings allows
   10  COULD_NOT_CHECK  nothing broken, but at least one check could not be made (host unreachable, no answer)
   11  NOT_JUDGED       a full run left facts the inventory declares without any verdict

The most severe applies: 1 over 10 over 5 over 11. `run_exit_code` decides it from the typed results.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from .results import TestResult


class ExitCode(enum.IntEnum):
    """Exit statuses of a contract run (0–4 are pytest's own)."""

    GREEN = 0
    CONTRACT_BROKEN = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    USAGE = 4
    NOTHING_CHECKED = 5
    MAX_WARNINGS = 6
    COULD_NOT_CHECK = 10
    NOT_JUDGED = 11

    def describe(self) -> str:
        """`10 (could not check)`."""
        return f"{int(self)} ({self.name.lower().replace('_', ' ')})"


JUDGED_OUTCOMES = frozenset({"passed", "xfailed", "xpassed"})


def run_exit_code(tests: Iterable[TestResult], pytest_status: int, *, not_judged: int = 0) -> ExitCode:
    """The run's exit status from its test results and pytest's own status (2, 3, 4, 6 pass through)."""
    if pytest_status in (ExitCode.INTERRUPTED, ExitCode.INTERNAL_ERROR, ExitCode.USAGE, ExitCode.MAX_WARNINGS):
        return ExitCode(pytest_status)
    outcomes = [t.outcome for t in tests]
    if "failed" in outcomes:
        return ExitCode.CONTRACT_BROKEN
    if "error" in outcomes:
        return ExitCode.COULD_NOT_CHECK
    if pytest_status == ExitCode.CONTRACT_BROKEN:
        return ExitCode.CONTRACT_BROKEN  # a failure outside any test (a session-level hook)
    if not JUDGED_OUTCOMES & set(outcomes):
        return ExitCode.NOTHING_CHECKED
    if not_judged:
        return ExitCode.NOT_JUDGED
    return ExitCode.GREEN
