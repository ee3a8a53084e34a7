"""A test's markers in results.json are its markers, not the names of the folders it sits in (a report's keywords
hold both: a checkout under a folder named `perf` marked every test `perf`)."""

from __future__ import annotations

import pytest

from fixtures.evidence import MARKERS_ATTR, pytest_runtest_makereport

pytest_plugins = ["pytester"]


def _setup_report(item: pytest.Item) -> pytest.TestReport:
    call = pytest.CallInfo.from_call(lambda: None, "setup")
    hook = pytest_runtest_makereport(item, call)
    next(hook)
    try:
        hook.send(pytest.TestReport.from_item_and_call(item, call))
    except StopIteration as done:
        return done.value
    raise AssertionError("the makereport wrapper did not return")


def test_a_tests_markers_are_its_own_not_its_folders_names(pytester):
    pytester.makepyfile(**{"perf/smoke/test_mine": "import pytest\n\n"
                                                   "@pytest.mark.hosts\ndef test_mine():\n    pass\n"})
    (item,) = pytester.getitems(pytester.path / "perf" / "smoke" / "test_mine.py")
    report = _setup_report(item)
    assert {"perf", "smoke", "hosts"} <= set(report.keywords)  # the folders' names are keywords
    assert getattr(report, MARKERS_ATTR) == ["hosts"]
