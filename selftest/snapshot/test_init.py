"""`llmval init`: for every platform, the scaffold's inventory passes `llmval check-inventory`, the systemd unit
runs the smoke contract with --wait-ready on that inventory, the workflow keeps GitHub's expressions; a second
init into the same folder overwrites nothing."""

from __future__ import annotations

import pytest

from llmval.__main__ import main
from llmval.init import PLATFORMS
from llmval.inventory import load_inventory


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_init_writes_a_valid_inventory_and_its_runners(platform, tmp_path, capsys):
    folder = tmp_path / f"ops {platform}"
    assert main(["init", str(folder), "--platform", platform]) == 0
    assert main(["check-inventory", str(folder / "inventory.toml")]) == 0
    inventory = load_inventory(folder / "inventory.toml")
    assert [e.engine for e in inventory.endpoints] == [platform]
    assert inventory.deployment.name == f"ops-{platform}"
    service = (folder / "systemd" / "llmval-smoke.service").read_text()
    assert f"--inventory={folder.resolve()}/inventory.toml -m smoke --wait-ready=900" in service
    assert "OnBootSec=" in (folder / "systemd" / "llmval-smoke.timer").read_text()
    workflow = (folder / ".github" / "workflows" / "llmval.yml").read_text()
    assert "${{ github.run_id }}" in workflow and "$name" not in workflow
    assert "--inventory=inventory.toml" in workflow


def test_init_never_overwrites(tmp_path, capsys):
    (tmp_path / "inventory.toml").write_text("mine\n")
    assert main(["init", str(tmp_path), "--platform", "vllm"]) == int(pytest.ExitCode.USAGE_ERROR)
    assert "never overwrites" in capsys.readouterr().err
    assert (tmp_path / "inventory.toml").read_text() == "mine\n"
    assert not (tmp_path / "systemd").exists()
