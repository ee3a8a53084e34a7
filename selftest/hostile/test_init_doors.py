"""`llmval init DIR` checks every target first, then writes only inside DIR, whole or not at all (issue 45.5).

Before: a dangling `inventory.toml` link in DIR was written through (the file appeared outside DIR), and a
`systemd` that is a file let three files be written before `[Errno 17]`, exit 4. Now anything on a target's way
that is a link or no folder, or a target that exists in any form, is refused before a byte is written (exit 4,
naming it), and a write that fails midway takes back what it made.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmval.cli.main import main


def _tree(folder: Path) -> dict[str, str]:
    """Every entry under `folder` (links not followed): its relative path -> what it is."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            out[str(path.relative_to(folder))] = f"-> {os.readlink(path)}" if path.is_symlink() else \
                "folder" if path.is_dir() else path.read_text()
    return out


def _plant(repo: Path, outside: Path, case: str) -> None:
    if case == "dangling-inventory-link":
        (repo / "inventory.toml").symlink_to(outside / "planted.toml")
    elif case == "inventory-link-to-a-file":
        (outside / "mine.toml").write_text("mine\n")
        (repo / "inventory.toml").symlink_to(outside / "mine.toml")
    elif case == "systemd-a-file":
        (repo / "systemd").write_text("not a folder\n")
    elif case == "systemd-a-link-to-a-folder":
        (repo / "systemd").symlink_to(outside)
    elif case == "github-a-dangling-link":
        (repo / ".github").symlink_to(outside / "nowhere")
    elif case == "workflows-a-link":
        (repo / ".github").mkdir()
        (repo / ".github" / "workflows").symlink_to(outside)
    elif case == "timer-a-dangling-link":
        (repo / "systemd").mkdir()
        (repo / "systemd" / "llmval-smoke@.timer").symlink_to(outside / "planted.timer")
    elif case == "pytest-ini-a-folder":
        (repo / "pytest.ini").mkdir()


CASES = ["dangling-inventory-link", "inventory-link-to-a-file", "systemd-a-file", "systemd-a-link-to-a-folder",
         "github-a-dangling-link", "workflows-a-link", "timer-a-dangling-link", "pytest-ini-a-folder"]


@pytest.mark.parametrize("case", CASES)
def test_init_refuses_before_writing_anything_and_never_writes_outside(tmp_path, capsys, case):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    _plant(repo, outside, case)
    before, outside_before = _tree(repo), _tree(outside)
    assert main(["init", str(repo), "--platform", "vllm"]) == int(pytest.ExitCode.USAGE_ERROR)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "never overwrites nor writes through a link" in err, err
    assert str(repo) in err, err
    assert _tree(repo) == before and _tree(outside) == outside_before  # nothing written, inside or out


@pytest.mark.parametrize("case", ["a-file", "a-loop"])
def test_init_into_a_dir_that_is_no_folder_is_exit_4_naming_it(tmp_path, capsys, case):
    repo = tmp_path / "repo"
    if case == "a-file":
        repo.write_text("x\n")
    else:
        repo.symlink_to("repo")
    assert main(["init", str(repo), "--platform", "vllm"]) == int(pytest.ExitCode.USAGE_ERROR)
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{repo} " in err, err


def test_a_write_that_fails_midway_takes_back_what_it_made(tmp_path, capsys, monkeypatch):
    """The third file's link fails (a full disk, a name taken meanwhile): the two written and the folders made
    are removed, no temporary file is left, and the error names the folder."""
    repo = tmp_path / "repo"
    repo.mkdir()
    real_link, calls = os.link, []

    def failing_link(*args, **kwargs):
        calls.append(args)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real_link(*args, **kwargs)

    monkeypatch.setattr(os, "link", failing_link)
    assert main(["init", str(repo), "--platform", "vllm"]) == int(pytest.ExitCode.USAGE_ERROR)
    err = capsys.readouterr().err
    assert "No space left on device" in err and "nothing was written" in err and "Traceback" not in err, err
    assert _tree(repo) == {}


def test_init_into_an_existing_folder_that_is_a_link_writes_into_its_target(tmp_path, capsys):
    """DIR itself may be a link the user named (a checkout under a symlinked home): followed once, then
    everything is written inside it."""
    target = tmp_path / "real"
    target.mkdir()
    (tmp_path / "repo").symlink_to(target)
    assert main(["init", str(tmp_path / "repo"), "--platform", "vllm"]) == 0
    capsys.readouterr()
    assert (target / "inventory.toml").is_file() and (target / "systemd" / "llmval-smoke@.timer").is_file()
    assert not [name for name in _tree(target) if ".llmval-init-" in name]  # no temporary file left
