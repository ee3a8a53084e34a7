"""One answer to "which targets is this test about" (issue 22.4): `fixtures.targets.targets_of`, over a small
protocol (`HasTargets`), used by the smoke filter and the readiness gate alike. Before, three functions worked it
out and disagreed: the 11 host tests parametrized over parts of hosts and model groups were seen by the smoke
filter but not by the ready gate, so a host that never became ready had them fail one by one."""

from __future__ import annotations

import ast
from types import SimpleNamespace

from fixtures.hostfacts import ModelGroup, Part
from fixtures.ready import _awaited, _targets_of
from fixtures.targets import HasTargets, Target, targets_of
from llmval.inventory import load_inventory
from selftest.strategies import ROOT

KPRO6 = load_inventory(ROOT / "inventories" / "kpro6.toml")


def _item(**params):
    return SimpleNamespace(callspec=SimpleNamespace(params=params))


def test_each_kind_of_parameter_names_its_targets_own_first():
    host, endpoint = KPRO6.hosts[0], KPRO6.endpoints[0]
    guest = Part(host, "guest 129")
    group = ModelGroup("qwen", ((host, None), (KPRO6.hosts[-1], None)))
    assert isinstance(guest, HasTargets) and isinstance(group, HasTargets)
    assert targets_of(_item(host=host)) == [Target("host", host.name)]
    assert targets_of(_item(lxc_guest=guest)) == [Target("host", host.name)]
    assert targets_of(_item(model_group=group)) == list(dict.fromkeys(
        [Target("host", host.name), Target("host", KPRO6.hosts[-1].name)]))
    assert targets_of(_item(endpoint=endpoint))[0] == Target("endpoint", endpoint.name)
    if endpoint.host:
        assert Target("host", endpoint.host, judged=False) in targets_of(_item(endpoint=endpoint))
    assert targets_of(_item(perf_gate=SimpleNamespace(endpoint=endpoint.name))) == [Target("endpoint", endpoint.name)]
    assert targets_of(_item(niah_grid="local-vllm")) == [] and targets_of(SimpleNamespace()) == []


def test_the_ready_gate_sees_parts_of_hosts_and_model_groups():
    host = KPRO6.hosts[0]
    for value in (Part(host, "guest"), ModelGroup("g", ((host, None),))):
        item = _item(part=value)
        assert _targets_of(item) == [("host", host.name)]
        assert _awaited(item, {("host", host.name): 300.0})


def test_no_other_fixture_works_out_targets_from_parameters():
    """Only targets_of reads a test's parameters for its targets (evidence.py reads them for the subject's name
    and the check id, which are not targets)."""
    readers = set()
    for path in sorted((ROOT / "fixtures").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "callspec":
                readers.add(path.name)
            if isinstance(node, ast.Constant) and node.value == "callspec":
                readers.add(path.name)
    assert readers <= {"targets.py", "evidence.py"}
