"""The inventory: seeds load, the schema is current, and any broken input gives one short InventoryError."""

from __future__ import annotations

import tomllib

import pytest
import tomli_w
from hypothesis import example, given, note
from hypothesis import strategies as st

from llmval import InventoryError, inventory_json_schema, load_inventory
from llmval.inventory import parse_inventory
from selftest.strategies import ROOT, SEED_INVENTORIES, broken_inventories, malformed_toml_texts


@pytest.mark.parametrize("path", SEED_INVENTORIES, ids=lambda p: p.stem)
def test_seed_inventories_are_valid(path):
    inventory = load_inventory(path)
    assert inventory.hosts and inventory.endpoints


def test_committed_json_schema_is_current():
    committed = (ROOT / "inventories" / "inventory.schema.json").read_text()
    assert committed == inventory_json_schema(), \
        "inventories/inventory.schema.json is stale: run `make schema` (it is generated from the inventory models)"


def _assert_short_and_named(error: InventoryError, source: str) -> None:
    message = str(error)
    assert message.startswith(f"invalid inventory {source}:")
    assert "Traceback" not in message
    assert len(message.splitlines()) <= 30


@given(document=broken_inventories())
def test_broken_inventory_gives_inventory_error_or_stays_valid(document):
    # A mutation can be harmless (deleting an optional key); anything else must be one InventoryError.
    try:
        parse_inventory(document, "broken.toml")
    except InventoryError as error:
        note(str(error))
        _assert_short_and_named(error, "broken.toml")


@given(text=malformed_toml_texts())
@example(text="[deployment\nname = 'x'")
def test_malformed_toml_gives_inventory_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("inv") / "bad.toml"
    path.write_bytes(text.encode("utf-8", "replace"))
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    _assert_short_and_named(caught.value, str(path))


def _local() -> dict:
    return tomllib.loads((ROOT / "inventories" / "local.toml").read_text())


@pytest.mark.parametrize(
    ("mutate", "key_path", "reason"),
    [
        (lambda d: d["endpoints"][0].pop("model"), "endpoints[0:local-vllm].model", "required key is missing"),
        (lambda d: d["hosts"][0].update(timeout_s="soon"), "hosts[0:localhost].timeout_s", "valid number"),
        (lambda d: d["endpoints"][0].update(engine="vlm"), "endpoints[0:local-vllm].engine", "'vlm'"),
        (lambda d: d["hosts"][0].update(colour="red"), "hosts[0:localhost].colour", "unknown key"),
        (lambda d: d["endpoints"][0].update(host="nowhere"), "endpoints[0:local-vllm].host",
         "'nowhere' is not a host"),
        (lambda d: d["endpoints"][0].update(api_key="sk-live-123"), "endpoints[0:local-vllm].api_key", "unknown key"),
        # values that reach a host command (issue 12.1): never option-shaped, never outside their character set
        (lambda d: d["hosts"][0]["model_files"][0].update(path="-delete"), "hosts[0:localhost].model_files[0].path",
         "starts with '-'"),
        (lambda d: d["hosts"][0].update(services=[{"kind": "systemd", "name": "--host=evil"}]),
         "hosts[0:localhost].services[0:--host=evil]", "a systemd unit name"),
        (lambda d: d["hosts"][0].update(services=[{"kind": "docker", "name": "--privileged"}]),
         "hosts[0:localhost].services[0:--privileged]", "a docker container name"),
        (lambda d: d["hosts"][0].update(services=[{"kind": "docker", "name": "c", "image": "-v/:/x"}]),
         "hosts[0:localhost].services[0:c].image", "should match pattern"),
        (lambda d: d["hosts"][0].update(transport={"kind": "ssh", "address": "-oProxyCommand=touch /tmp/p"}),
         "hosts[0:localhost].transport.address", "should match pattern"),
        (lambda d: d["hosts"][0]["interfaces"][0].update(name="lo;reboot"),
         "hosts[0:localhost].interfaces[0:lo;reboot].name", "should match pattern"),
        (lambda d: d["hosts"][0]["env"]["required"].update({"X;touch /tmp/p;Y": "1"}),
         "hosts[0:localhost].env.required.X;touch /tmp/p;Y", "should match pattern"),
        (lambda d: d["launch"]["start"][0]["env"].update({"X;touch /tmp/p;Y": "1"}),
         "launch.start[0:", "should match pattern"),
        (lambda d: d["hosts"][0]["env"].update(source="process:-x vllm"), "hosts[0:localhost].env.source",
         "may not start with '-'"),
        (lambda d: d["hosts"][0]["env"].update(source="proces:vllm"), "hosts[0:localhost].env.source",
         "'proces:vllm' is not one of"),
        (lambda d: d["endpoints"][0].update(logs="jornal:x"), "endpoints[0:local-vllm].logs", "unknown source"),
        (lambda d: d["hosts"][0]["model_files"][0].update(path="data\x00x"), "model_files[0].path", "NUL"),
        # secrets and URLs (issue 12.2)
        (lambda d: d["endpoints"][0].update(base_url="http://user:pw@127.0.0.1:8321"),
         "endpoints[0:local-vllm].base_url", "api_key_env"),
        (lambda d: d["endpoints"][0].update(base_url="http:///v1"), "endpoints[0:local-vllm].base_url", "no host"),
        (lambda d: d["endpoints"][0].update(base_url="http://127.0.0.1:0"), "endpoints[0:local-vllm].base_url",
         "1-65535"),
        # values that would crash, hang or leak at run time (issue 12.5)
        (lambda d: d["endpoints"][0].update(request_timeout_s=float("inf")),
         "endpoints[0:local-vllm].request_timeout_s", "finite"),
        (lambda d: d["endpoints"][0].update(request_timeout_s=10**7), "endpoints[0:local-vllm].request_timeout_s",
         "less than or equal to 86400"),
        (lambda d: d["endpoints"][0]["tool_calls"].update(default_min_validity=float("nan")),
         "tool_calls.default_min_validity", "finite"),
        (lambda d: d["endpoints"][0]["tool_calls"].update(min_validity={"overall": 5.0}),
         "tool_calls.min_validity.overall", "less than or equal to 1"),
        (lambda d: d["hosts"][0].update(gpus={"count": 2**64}), "hosts[0:localhost].gpus.count", "out of range"),
        (lambda d: d["deployment"].update(name="prod/../x"), "deployment.name", "prod/../x"),
        (lambda d: d["deployment"].update(name="a.b"), "deployment.name", "a.b"),
        (lambda d: d["endpoints"][0].update(model=""), "endpoints[0:local-vllm].model", "at least 1 character"),
        (lambda d: d["hosts"][0].update(name="x" * 140_000), "hosts[0:xxxx", "a string of 140000 characters"),
        (lambda d: d["hosts"][0].update(services=[{"kind": "systemd", "name": "vllm\x00"}]), "services[0:vllm\\x00]",
         "systemd unit name"),
        (lambda d: d.update(decisions=[*d["decisions"], d["decisions"][0]]), "decisions[", "duplicate id"),
        (lambda d: d.update(blockers=[{"id": "b", "reason": "r", "check": "a.b"}] * 2), "blockers[1:b].id",
         "duplicate id"),
        (lambda d: d["hosts"][0].update(proxmox={"guests": [
            {"id": 129, "kind": "lxc", "driver": "nvidia", "bus_ids": ["0000:01:00.0"]},
            {"id": 130, "kind": "vm", "driver": "vfio-pci", "bus_ids": ["0000:01:00.0"]}]}),
         "hosts[0:localhost].proxmox", "one guest only"),
        (lambda d: d["deployment"].update(constraints=[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]),
         "deployment.constraints", "nested deeper"),
        (lambda d: d.update(niah=[*d["niah"], d["niah"][0]]), "niah[2].name", "repeats"),
        (lambda d: d.update(agentic=[*d["agentic"], d["agentic"][0]]), "agentic[1].name", "repeats"),
    ],
    ids=["missing-key", "wrong-type", "unknown-engine", "unknown-key", "dangling-reference", "secret-in-file",
         "path-option", "unit-option", "container-option", "image-option", "ssh-address-option", "interface-shell",
         "env-key-shell", "launch-env-key-shell", "pgrep-option", "unknown-source-kind", "unknown-log-kind",
         "path-nul", "url-userinfo", "url-no-host", "url-port-0", "timeout-inf", "timeout-huge", "rate-nan",
         "rate-5", "gpu-count-2^64", "name-traversal", "name-dot", "empty-model", "name-140k", "unit-nul",
         "duplicate-decision", "duplicate-blocker", "bus-id-in-lxc-and-vm", "nesting", "duplicate-niah-grid",
         "duplicate-agentic-grid"],
)
def test_each_broken_inventory_names_file_key_path_and_reason(tmp_path, mutate, key_path, reason):
    document = _local()
    mutate(document)
    path = tmp_path / "broken.toml"
    path.write_text(tomli_w.dumps(document))
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    message = str(caught.value)
    _assert_short_and_named(caught.value, str(path))
    assert key_path in message and reason in message


def test_missing_file_is_an_inventory_error(tmp_path):
    with pytest.raises(InventoryError, match="file not found"):
        load_inventory(tmp_path / "nope.toml")


@given(st.sampled_from(SEED_INVENTORIES))
def test_inventory_round_trips_through_its_model(path):
    inventory = load_inventory(path)
    again = parse_inventory(inventory.model_dump(by_alias=True, exclude_none=True, mode="json"))
    assert again == inventory
