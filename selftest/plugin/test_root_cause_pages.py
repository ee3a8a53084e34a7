"""Issue 43.1: the after-reboot page. `pytest -m smoke --wait-ready` against targets that never come up names the
readiness verdict as the one root cause, first, in the terminal, status.md, report.html and results.json (the
readiness checks and the checks that wait on them cycled, and the run had 23 could-not-check and no root cause);
and the check dependencies of the whole contract, collected with every shipped inventory, are a DAG."""

from __future__ import annotations

import json
import socket

import pytest

from llmval.core.dependencies import CHECKS
from llmval.core.errors import LlmvalError
from selftest.contract import run_contract
from selftest.strategies import ROOT, SEED_INVENTORIES

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.subprocess


def _closed_port() -> int:
    with socket.socket() as sock:  # bound then closed: nothing listens there while the test runs
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pages(pytester) -> tuple[str, str, dict]:
    reports = pytester.path / "reports"
    return ((reports / "status.md").read_text(), (reports / "report.html").read_text(),
            json.loads((reports / "results.json").read_text()))


def test_a_never_up_endpoint_is_one_root_cause_on_every_page(pytester):
    port = _closed_port()
    inventory = pytester.path / "never-up.toml"
    inventory.write_text(f'[deployment]\nname = "never-up"\nkind = "lab"\n\n[[endpoints]]\nname = "ep"\n'
                         f'platform = "local"\nbase_url = "http://127.0.0.1:{port}"\nengine = "vllm"\nmodel = "m"\n')
    result = run_contract(pytester, "-m", "smoke", "-p", "no:xdist", "--inventory", str(inventory), "--wait-ready=1")
    out = result.stdout.str()
    assert result.ret == 1, out[-3000:]
    block = out.split("llmval: 1 root cause(s), what each explains under it")[1]
    assert block.lstrip("- \n").startswith("BROKEN serving.ready [ep]"), block[:1500]
    assert "fix: nothing listens on the endpoint's port: the engine is not running" in block, block[:1500]
    assert "could not run because serving.ready failed" in block and "log tail below" not in block
    status, page, results = _pages(pytester)
    head = status.split("## Goal")[0]
    assert head.index("Verdict: **RED**") < head.index("## What broke") < head.index("`serving.ready` on ep")
    assert "Connection refused" in head and "fix: nothing listens on the endpoint's port" in head
    assert "nothing failing" not in status and "nothing: every check holds" not in status
    assert "<code>serving.ready</code> on ep" in page.split('class="broke red"')[1].split("</div>")[0]
    roots = results["root_causes"]
    assert [r["check"] for r in roots] == ["serving.ready"] and len(roots[0]["explains"]) >= 15, roots


def test_never_up_hosts_are_the_root_of_their_endpoints(pytester):
    port = _closed_port()
    inventory = pytester.path / "hosts-down.toml"
    inventory.write_text(
        f'[deployment]\nname = "hosts-down"\nkind = "lab"\n\n[[hosts]]\nname = "h"\nplatform = "p"\n'
        f'transport = {{ kind = "ssh", address = "127.0.0.1", port = {port}, user = "nobody" }}\ntimeout_s = 5\n\n'
        f'[[endpoints]]\nname = "ep"\nplatform = "p"\nhost = "h"\nbase_url = "http://127.0.0.1:{port}"\n'
        f'engine = "sglang"\nmodel = "m"\n')
    result = run_contract(pytester, "-m", "smoke", "-p", "no:xdist", "--inventory", str(inventory), "--wait-ready=1")
    out = result.stdout.str()
    assert result.ret == 1, out[-3000:]
    assert "llmval: 1 root cause(s)" in out and "BROKEN hosts.ready [h]" in out, out[-3000:]
    status, _, results = _pages(pytester)
    assert [r["check"] for r in results["root_causes"]] == ["hosts.ready"]
    explained = results["root_causes"][0]["explains"]
    assert any("test_endpoint_ready_within_wait[ep]" in nodeid for nodeid in explained), explained
    assert status.split("## Goal")[0].count("`hosts.ready` on h") == 1


@pytest.mark.parametrize("inventory", SEED_INVENTORIES, ids=lambda p: p.stem)
def test_the_contracts_check_dependencies_are_a_dag(pytester, inventory):
    """Every collected check's declared dependencies and the readiness gate's form no cycle (collection refuses
    one: exit 4), and no verdict of the run can close one through an error's own dependencies: `HostUnreachable`
    names `hosts.reachable`, which waits on no host check but `hosts.ready`."""
    pytester.chdir()
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                                          str(ROOT / "pyproject.toml"), str(ROOT / "tests"), "--collect-only", "-q",
                                          "-p", "no:xdist", "--inventory", str(inventory), "--wait-ready=1")
    assert result.ret == 0, result.stdout.str()[-2000:]
    edges = CHECKS.edges()
    assert CHECKS.is_acyclic() and not CHECKS.refused
    if any(c.startswith("serving.") for c in edges):
        assert "serving.ready" in edges.get("serving.health", ()) | edges.get("serving.model.id", ()), edges
    assert not edges.get("serving.ready", frozenset()) - {"hosts.ready"}  # the first check of an endpoint
    assert not edges.get("hosts.ready")  # the first check of a host
    unreachable = {d for cls in _subclasses(LlmvalError) for d in getattr(cls, "depends_on", ())
                   if d.startswith("hosts.")}
    for check in [c for c in edges if c.startswith("hosts.") and c != "hosts.ready"]:
        CHECKS.declare(check, unreachable, strict=True, where=f"an error of {check}")
    assert CHECKS.is_acyclic()


def _subclasses(cls: type) -> list[type]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _subclasses(sub)
    return found


def test_a_node_down_is_one_root_cause_with_its_containers_readiness_under_it(pytester):
    """Issue 43.3 on the after-reboot page: an LXC container reached through its node (`via`) cannot answer while
    the node does not; `inventories/kpro6.toml` with no host reachable gave two roots (`hosts.ready` on kpro6 and on
    kpro6-ct129), the container's first. One fault, one root: the node's, the container's readiness under it."""
    port = _closed_port()
    inventory = pytester.path / "node-down.toml"
    inventory.write_text(
        f'[deployment]\nname = "node-down"\nkind = "lab"\n\n[[hosts]]\nname = "node"\nplatform = "p"\n'
        f'transport = {{ kind = "ssh", address = "127.0.0.1", port = {port}, user = "nobody" }}\ntimeout_s = 5\n\n'
        f'[[hosts]]\nname = "ct"\nplatform = "p"\ntransport = {{ kind = "pct", via = "node", container = 129 }}\n'
        f'timeout_s = 5\n\n[[endpoints]]\nname = "ep"\nplatform = "p"\nhost = "ct"\n'
        f'base_url = "http://127.0.0.1:{port}"\nengine = "sglang"\nmodel = "m"\n')
    result = run_contract(pytester, "-m", "smoke", "-p", "no:xdist", "--inventory", str(inventory), "--wait-ready=1")
    out = result.stdout.str()
    assert result.ret == 1, out[-3000:]
    block = out.split("llmval: 1 root cause(s), what each explains under it")[1]
    assert block.lstrip("- \n").startswith("BROKEN hosts.ready [node]"), block[:1500]
    failures = out.split("= FAILURES =")[1]
    assert failures.index("test_host_ready_within_wait[node]") < failures.index("test_host_ready_within_wait[ct]")
    _, page, results = _pages(pytester)
    assert [(r["check"], r["target"]) for r in results["root_causes"]] == [("hosts.ready", "node")]
    assert any(n.endswith("test_host_ready_within_wait[ct]") for n in results["root_causes"][0]["explains"])
    assert "<code>hosts.ready</code> on ct" not in page.split('class="broke red"')[1].split("<details>")[0]


def test_a_check_a_host_not_ready_stops_is_named_by_its_id_not_its_test(pytester):
    """kpro6 with no host reachable listed `test_no_zombie_gpu_workers` among the checks hosts.ready explains: the
    zombie check raised NotReady before naming itself (ZOMBIE_CHECK is a constant, not a literal in its expect)."""
    from fixtures.evidence import declared_check

    pytester.chdir()
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                                        str(ROOT / "pyproject.toml"), str(ROOT / "tests" / "hosts" /
                                                                          "test_processes.py"),
                                        "-p", "no:xdist", f"--inventory={ROOT / 'inventories' / 'kpro6.toml'}")
    zombie = [i for i in items if i.originalname == "test_no_zombie_gpu_workers"]
    assert zombie and {declared_check(i) for i in zombie} == {"hosts.gpu.zombie_workers"}


def test_an_environment_check_a_host_not_ready_stops_is_named_by_its_id_and_host(pytester):
    """kpro6 with no host reachable listed `test_serving_env_as_required` on `kpro6-ct129-NCCL_DEBUG` among the
    checks hosts.ready explains: its check id is computed from the variable's name and its parameter (a host part)
    has no name of its own. The part carries its check id (a check marker) and names its host as its target."""
    from fixtures.evidence import declared_check, item_target

    pytester.chdir()
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                                        str(ROOT / "pyproject.toml"), str(ROOT / "tests" / "hosts" / "test_env.py"),
                                        "-p", "no:xdist", f"--inventory={ROOT / 'inventories' / 'kpro6.toml'}")
    env = [i for i in items if i.originalname == "test_serving_env_as_required"]
    named = {(declared_check(i), item_target(i)) for i in env}
    assert ("hosts.env.nccl_debug", "kpro6-ct129") in named, sorted(named)
    hosts = {i.callspec.params["env_var"].host.name for i in env}  # every target a host, never `<host>-<VARIABLE>`
    assert all(check.startswith("hosts.env.") and target in hosts for check, target in named), sorted(named)
