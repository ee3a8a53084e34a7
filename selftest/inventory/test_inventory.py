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
        "stale: run python -m llmval schema > inventories/inventory.schema.json"


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
        (lambda d: d["endpoints"][0].update(host="nowhere"), "", "host 'nowhere' is not a host"),
        (lambda d: d["endpoints"][0].update(api_key="sk-live-123"), "endpoints[0:local-vllm].api_key", "unknown key"),
    ],
    ids=["missing-key", "wrong-type", "unknown-engine", "unknown-key", "dangling-reference", "secret-in-file"],
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
