"""`llmval snapshot` on the recordings: placeholders filled from what the hosts and the engine said, the rest
listed, a contradiction shown, and the written inventory valid and GREEN against the same recording."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmval.__main__ import main
from llmval.cli.snapshot import diff, placeholder_paths, show, take, write_toml
from llmval.inventory import load_inventory
from selftest.hosts._contract import not_passed, run_hosts
from selftest.strategies import ROOT

REPLAYS = ROOT / "selftest" / "data" / "replays"
KPRO6 = [REPLAYS / "hosts" / "SYNTHESIZED-kpro6-healthy", REPLAYS / "SYNTHESIZED-kpro6-sglang-healthy"]
pytest_plugins = ["pytester"]

SPARK = [REPLAYS / "hosts" / "SYNTHESIZED-spark-healthy", REPLAYS / "SYNTHESIZED-spark-vllm-healthy"]


def _changes(inventory: Path, replays: list[Path]) -> dict[str, dict[str, object]]:
    _, snap = take(inventory, replays)
    changes = diff(snap, placeholder_paths(inventory.read_text()))
    return {kind: {c.path: c.observed for c in changes if c.kind == kind}
            for kind in ("filled", "differs", "added", "unanswered", "confirmed")}


def test_placeholders_are_found_where_the_seed_marks_them():
    text = (ROOT / "inventories" / "kpro6.toml").read_text()
    data = load_inventory(ROOT / "inventories" / "kpro6.toml").model_dump()
    shown = {show(p, data) for p in placeholder_paths(text)}
    assert {"hosts[kpro6].proxmox.guests", "hosts[kpro6-ct129].gpus.bus_ids", "hosts[kpro6-ct129].env.source",
            "endpoints[kpro6-sglang].base_url", "endpoints[kpro6-sglang].max_model_len"} <= shown
    assert "hosts[kpro6-ct129].gpus.count" not in shown  # declared from the seeds, not a placeholder


def test_kpro6_fills_every_host_placeholder_and_lists_the_judgement_calls():
    changes = _changes(ROOT / "inventories" / "kpro6.toml", KPRO6)
    assert changes["differs"] == {}
    assert changes["filled"]["hosts[kpro6].proxmox.guests[130].driver"] == "vfio-pci"
    assert changes["filled"]["hosts[kpro6-ct129].gpus.driver_min"] == "580.82.07"
    assert changes["filled"]["hosts[kpro6-ct129].gpu_processes.allowed_units"] == ["sglang.service"]
    assert changes["filled"]["endpoints[kpro6-sglang].logs"] == "journal:sglang.service"
    assert len(changes["added"]["hosts[kpro6-ct129].gpus.uuids"]) == 4  # type: ignore[arg-type]
    # every host-side placeholder was answered; what is left is an address, a gate or a calibration
    assert not [p for p in changes["unanswered"] if p.startswith("hosts")]
    assert set(changes["unanswered"]) >= {"endpoints[kpro6-sglang].base_url", "perf[kpro6-sglang].ttft_p99_ms_max"}


def test_spark_confirms_container_names_and_measures_the_model(tmp_path):
    changes = _changes(ROOT / "inventories" / "spark.toml", SPARK)
    assert changes["differs"] == {}
    assert changes["filled"]["hosts[spark2].model_files[0].min_bytes"] == 119966141329
    assert changes["filled"]["hosts[spark1].services[vllm-qwen35].name"] == "vllm-qwen35"
    assert changes["filled"]["endpoints[spark-vllm].max_model_len"] == 262144
    assert changes["filled"]["hosts[spark1].ray.run_in"] == "docker:vllm-qwen35"
    assert changes["confirmed"]["hosts[spark1].ray.alive_nodes"] == 2
    assert "endpoints[spark-vllm].base_url" in changes["unanswered"]


def test_a_declared_value_the_deployment_contradicts_is_shown(tmp_path):
    wrong = tmp_path / "kpro6.toml"
    wrong.write_text((ROOT / "inventories" / "kpro6.toml").read_text()
                     .replace('compute_capability = "12.0"', 'compute_capability = "9.0"'))
    changes = _changes(wrong, KPRO6)
    assert changes["differs"] == {"hosts[kpro6-ct129].gpus.compute_capability": "12.0"}


@pytest.mark.parametrize(("seed", "replays"), [("kpro6", KPRO6), ("spark", SPARK)])
def test_the_written_inventory_is_valid_and_green_on_its_recording(seed, replays, pytester, tmp_path):
    _, snap = take(ROOT / "inventories" / f"{seed}.toml", replays)
    written = tmp_path / f"{seed}-snapshot.toml"
    declared = (ROOT / "inventories" / f"{seed}.toml").read_text()
    changes = diff(snap, placeholder_paths(declared))
    written.write_text(write_toml(snap.inventory(changes), "test", declared,
                                  {o.path: o.source for o in snap.observations}))
    load_inventory(written)
    text = written.read_text()
    kept = [line.strip() for line in declared.splitlines() if line.strip().startswith("#")]
    assert kept and all(line in text for line in kept), [line for line in kept if line not in text]
    placeholders = [line for line in text.splitlines() if "=" in line.split("#")[0] and "# placeholder" in line]
    filled = [p[-1] for p in placeholder_paths(declared) if p in {o.path for o in snap.observations}]
    assert not any(line.split("=")[0].strip() == key for key in filled for line in placeholders), placeholders
    assert "# observed by llmval snapshot: " in text
    result, outcomes = run_hosts(pytester, f"--inventory={written}", "--replay", str(replays[0]), "-m", "hosts")
    assert result.ret == 0 and not not_passed(outcomes), not_passed(outcomes)
    assert sum(o == "passed" for o, _ in outcomes.values()) >= 20


def test_cli_writes_the_inventory_and_refuses_a_missing_recording(tmp_path, capsys):
    out = tmp_path / "spark.toml"
    assert main(["snapshot", "--inventory", str(ROOT / "inventories" / "spark.toml"),
                 *(f"--replay={r}" for r in SPARK), "--out", str(out)]) == 0
    assert "placeholder filled" in capsys.readouterr().out and load_inventory(out).hosts
    declared = (ROOT / "inventories" / "spark.toml").read_text()  # its comments kept (tomlkit), not re-dumped
    assert all(line in out.read_text() for line in declared.splitlines() if line.startswith("#"))
    assert main(["snapshot", "--inventory", str(ROOT / "inventories" / "spark.toml"),
                 "--replay", str(tmp_path / "nope")]) == int(pytest.ExitCode.USAGE_ERROR)
    assert "not a folder" in capsys.readouterr().err


def test_local_real_recording_confirms_the_served_model_and_engine_flags():
    changes = _changes(ROOT / "inventories" / "local.toml", [REPLAYS / "local-smoke-real"])
    assert changes["differs"] == {} and changes["filled"] == {}
    confirmed = changes["confirmed"]
    assert confirmed["endpoints[local-vllm].model"] == "smollm2"
    assert confirmed["endpoints[local-vllm].max_model_len"] == 8192
    assert confirmed["endpoints[local-vllm].expect.tool_call_parser"] == "hermes"
    assert confirmed["endpoints[local-vllm].expect.kv_cache_dtype"] == "bfloat16"
    assert confirmed["hosts[localhost].env.required"]["HF_HUB_OFFLINE"] == "1"  # type: ignore[index]
