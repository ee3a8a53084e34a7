"""Issue 43.7: a perf verdict judged on a busy client host (--perf-allow-busy-host) says so in its observed value,
which every report shows (status.md's Done list showed a plain pass)."""

from __future__ import annotations

import types

import pytest

from fixtures.evidence import VERDICT_NOTE_KEY, Expect
from fixtures.perf import PERF_KEY, busy_note


class _Item:
    """The parts of a pytest item `Expect` and `busy_note` read."""

    def __init__(self, perf: bool, judged_busy: list[str]):
        self.config = types.SimpleNamespace(stash={PERF_KEY: types.SimpleNamespace(judged_busy=judged_busy),
                                                   VERDICT_NOTE_KEY: busy_note})
        self.stash = {}
        self.own_markers, self.parent, self._perf = [], None, perf

    def get_closest_marker(self, name):
        return object() if name == "perf" and self._perf else None

    def iter_markers(self, name=None):
        return iter(())


@pytest.mark.parametrize(("perf", "busy", "noted"), [(True, ["other processes kept 1.40 cores"], True),
                                                      (True, [], False), (False, ["busy"], False)])
def test_a_perf_verdict_judged_on_a_busy_host_says_so(perf, busy, noted):
    item = _Item(perf, busy)
    verdict = Expect(item)("gate", "perf.decode_tok_s_c1", expected=">= 20", observed="22.1 tok/s", ok=True)
    assert verdict.is_held
    assert ("judged on a busy client host, --perf-allow-busy-host: other processes kept 1.40 cores" in
            verdict.observed) is noted
    assert verdict.observed.startswith("22.1 tok/s")
