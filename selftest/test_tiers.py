"""The self-tests' cost tiers (selftest/conftest.py): `make check` deselects exactly the cost markers, a test that
takes pytester is marked `subprocess`, and in the fast tier an unmarked test that starts a Python child fails
naming the marker it needs, so nothing costly hides there (a full run, CI's, only runs it); the tests on the
shared engine run last."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from selftest.conftest import (
    COSTLY,
    in_fast_tier,
    one_worker_group,
    pytest_collection_modifyitems,
    refuse_python_children,
    uses_the_shared_engine,
)
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


def test_the_shared_engines_tests_move_last_and_every_other_test_keeps_its_place():
    class Item:
        def __init__(self, name: str, *fixtures: str):
            self.name, self.fixturenames = name, ("request", *fixtures)

        def get_closest_marker(self, name: str) -> None:
            return None

    items = [Item("a"), Item("b", "live_engine"), Item("c", "engine_lock"), Item("d", "live_engine"), Item("e")]
    pytest_collection_modifyitems(items)
    assert [item.name for item in items] == ["a", "c", "e", "b", "d"]


def test_this_sessions_tests_on_the_shared_engine_run_last_one_after_another(request):
    """The shared engine (selftest/conftest.py `shared_engine`) stops with the session: no other test may come
    after the first of its users, or it would run beside that engine."""
    uses = [uses_the_shared_engine(item) for item in request.session.items]
    assert uses == sorted(uses), [item.nodeid for item in request.session.items if uses_the_shared_engine(item)]


def test_every_self_test_of_a_fixed_port_subnet_or_the_ops_repo_is_in_its_one_worker_group():
    """A module that binds the launch stub's 127.0.0.1:8337, brings up the fixed-subnet namespaces or builds the
    session's ops repo must be in ONE_WORKER, or under CI's two workers it races (or rebuilds) on the other."""
    needs = {"launch-stub-port": r"STUB_PORT|launch-stub-|\b8337\b",
             "netns": r"from (selftest\.hosts|\.) import netns\b",
             "ops-repo": r"def test_\w+\([^)]*\bops\b"}
    sources = {path.relative_to(ROOT).as_posix(): path.read_text() for path in (ROOT / "selftest").rglob("test_*.py")
               if path != Path(__file__).resolve()}
    for group, pattern in needs.items():
        users = sorted(name for name, text in sources.items() if re.search(pattern, text))
        assert users and all(one_worker_group(f"{user}::test") == group for user in users), (group, users)


@pytest.mark.subprocess
def test_dist_loadgroup_runs_a_one_worker_group_on_one_worker():
    """The Makefile's `-n 2 --dist loadgroup` really keeps a group together (xdist_group marks silently did not)."""
    run = subprocess.run([sys.executable, "-m", "pytest", "selftest/launch/test_parse.py", "selftest/test_tiers.py",
                          "-k", "not loadgroup and not python_child and not one_worker_group", "-n", "2",
                          "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    workers = re.findall(r"\[(gw\d)\] .*PASSED selftest/launch/", run.stdout)
    assert run.returncode == 0 and len(workers) > 2 and len(set(workers)) == 1, run.stdout[-3000:]
