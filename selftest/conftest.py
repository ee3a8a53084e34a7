"""Self-tests of the suite: no GPU, no network beyond loopback. Here: the Hypothesis profiles, the cost markers
(how a test is tiered, and the check that keeps the fast tier fast) and the fixtures that hold the real local
engine (one shared engine, its tests run last). Helpers and fakes live in modules of their own (selftest/README.md)."""

import fcntl
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from selftest.engine import ENGINE_LOCK, SELFTEST_ENGINE_PORT, engine_inventory, launched, require_engine_venv

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


# --- cost tiers: `make check` runs what is marked with none of these (pyproject.toml registers them) -----------
COSTLY = ("engine", "subprocess", "netns", "slow")
# a child that starts a Python interpreter (and imports pytest, llmval, ...) costs a second or more on this box
PYTHON_CHILDREN = re.compile(r"(^|/)(python[\d.]*|pytest|llmval|make|vllm|mkdocs)$")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test that takes `pytester` runs pytest in a child process here (every one does: `pytester.run` of
    `python -m pytest`), so it is marked `subprocess` without saying so itself; before -m deselects."""
    for item in items:
        if "pytester" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("subprocess"):
            item.add_marker(pytest.mark.subprocess)
    # The tests on the shared engine (`live_engine`) run last and one after another: their engine starts before the
    # first of them and stops after the last, with the session, so it never runs beside an engine another self-test
    # starts itself (the launch tests, the faulty and the one-CPU engines) or beside the busy-host test's burners.
    items.sort(key=uses_the_shared_engine)  # stable: every other test keeps its place


def uses_the_shared_engine(item: pytest.Item) -> bool:
    return "live_engine" in getattr(item, "fixturenames", ())


# Under CI's `-n 2 --dist loadgroup` (Makefile selftest) the tests that must not run beside each other share one
# worker. The groups are named here by module, not with xdist_group marks: on pytest 9.2 xdist 3.8 writes a mark's
# group into the legacy `_nodeid` field, which no longer names the test, so every mark was silently ignored
# (pytest-xdist#1386; CI's launch tests on both workers refused each other's stub as PortInUse).
ONE_WORKER = {
    "selftest/hosts/test_sshd.py": "netns",  # the namespaces' fixed 10.251.<n>.0/24 subnets
    "selftest/launch/": "launch-stub-port",  # the launch-stub-*.toml inventories bind 127.0.0.1:8337
    "selftest/plugin/test_first_day.py": "ops-repo",  # the session's one ops repo: a wheel built and installed,
    "selftest/plugin/test_package.py": "ops-repo",  # ~8 s, that a second worker would build again
}


def one_worker_group(nodeid: str) -> str | None:
    """The ONE_WORKER group of a test's node id (a module's path, or a folder's ending in /), or None."""
    path = nodeid.split("::", 1)[0]
    return next((group for where, group in ONE_WORKER.items()
                 if path == where or (where.endswith("/") and path.startswith(where))), None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadgroup`: xdist's own group scheduling (a group is one unit of work, every other test its own),
    with the groups of ONE_WORKER."""
    if config.getoption("dist", "no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # xdist is there: only it calls this hook

    class OneWorkerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return one_worker_group(nodeid) or nodeid

    return OneWorkerGroups(config, log)


def in_fast_tier(markexpr: str) -> bool:
    """The run deselects every cost marker (`make check`): only then must a test that is not marked stay cheap."""
    return all(re.search(rf"\b{name}\b", markexpr) for name in COSTLY) and "not" in markexpr


def refuse_python_children(nodeid: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on in this test, starting a Python child fails, naming the marker the test needs."""
    original = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        argv = [args] if isinstance(args, str | bytes | Path) else list(args)
        program = str(kwargs.get("executable") or (argv[0] if argv else ""))
        if PYTHON_CHILDREN.search(program) or program == sys.executable:
            pytest.fail(f"{nodeid} starts a Python child ({' '.join(map(str, argv))[:200]}): mark it "
                        f"@pytest.mark.subprocess (or engine / netns / slow), so `make check` leaves it to CI",
                        pytrace=False)
        original(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


@pytest.fixture(autouse=True)
def _python_children_are_marked(request, monkeypatch):
    """In the fast tier, a test with no cost marker that starts a Python child fails, naming the marker it needs:
    `make check` stays fast because nothing slow can hide in it. A full run (CI) only runs such a test."""
    if in_fast_tier(request.config.getoption("markexpr") or "") and not any(
            request.node.get_closest_marker(name) for name in COSTLY):
        refuse_python_children(request.node.nodeid, monkeypatch)
    yield


# --- the real local engine, for self-tests marked `engine` (its helpers: selftest/engine.py) -------------------
HEALTHY_WITHIN_S = 60
"""How long the shared engine may take to answer its ready probe before a test that uses it."""


@pytest.fixture(scope="session")
def engine_lock():
    """Holds the machine-wide lock that allows one extra engine at a time."""
    require_engine_venv()
    with open(ENGINE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
        fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def shared_engine(engine_lock, tmp_path_factory):
    """The real local engine (vLLM on CPU) on its self-test port, started once for every test that only needs a
    healthy engine already running (`live_engine`): its inventory's path and its `llmval.launch.Stack`.

    Session scope: its users run last (pytest_collection_modifyitems above), so the session's end is right after
    the last of them, and the engine never runs beside those that other engine self-tests start themselves."""
    folder = tmp_path_factory.mktemp("engine")
    path = engine_inventory(folder, SELFTEST_ENGINE_PORT)
    with launched(path, folder) as stack:
        yield path, stack


@pytest.fixture
def live_engine(shared_engine):
    """The shared real local engine, alive and ready before each test: the inventory's path. A test may read it
    (its own contract runs against it) and must leave it as it found it: no restart, no kill, no changed flag.

    Each test gets the same engine another test used before it, so one that died in between fails here, by name,
    not as a test that cannot reach it."""
    path, stack = shared_engine
    deadline = time.monotonic() + HEALTHY_WITHIN_S  # a probe's 2 s can pass unanswered on a loaded box
    while not (dead := [p for p in stack.processes if p.process.poll() is not None]):
        if stack.probe(stack.url):
            return path
        if time.monotonic() > deadline:
            break
        time.sleep(1)
    why = "; ".join(f"{p.name} (pid {p.pid}) exited {p.process.returncode}" for p in dead) or \
        f"{stack.url} did not answer 200 for {HEALTHY_WITHIN_S} s"
    pytest.fail(f"the shared local engine is not healthy before this test: {why}; its log: "
                f"{stack.processes[0].log_path if stack.processes else stack.log_dir}", pytrace=False)
