"""The self-tests' cost tiers (selftest/conftest.py): `make check` deselects exactly the cost markers, a test that
takes pytester is marked `subprocess`, and in the fast tier an unmarked test that starts a Python child fails
naming the marker it needs, so nothing costly hides there (a full run, CI's, only runs it)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from selftest.conftest import COSTLY, in_fast_tier, refuse_python_children
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]


def test_make_check_deselects_exactly_the_cost_markers_and_pyproject_registers_them():
    fast = re.search(r"^FAST := not \((?P<expr>[^)]*)\)$", (ROOT / "Makefile").read_text(), re.M)
    assert fast and set(fast["expr"].split(" or ")) == set(COSTLY), fast
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert all(f'"{name}: ' in pyproject for name in COSTLY)


def test_the_guard_is_on_only_where_every_cost_marker_is_deselected():
    assert in_fast_tier("not (engine or subprocess or netns or slow)")
    assert not in_fast_tier("") and not in_fast_tier("subprocess") and not in_fast_tier("not (engine or slow)")


def test_an_unmarked_test_that_starts_a_python_child_fails_naming_the_marker(request, monkeypatch):
    refuse_python_children(request.node.nodeid, monkeypatch)  # as the fast tier does for every unmarked test
    with pytest.raises(pytest.fail.Exception, match=r"starts a Python child .* mark it @pytest.mark.subprocess"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    assert subprocess.run(["true"], check=False).returncode == 0  # a plain command is no Python child


@pytest.mark.subprocess
def test_a_test_marked_subprocess_may_start_one():
    done = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True, check=True)
    assert done.stdout == "42\n"


def test_a_test_that_takes_pytester_is_marked_subprocess(pytester, request):
    assert request.node.get_closest_marker("subprocess") is not None
    assert pytester.path.is_dir()
