"""What `llmval snapshot --out` writes, and where it never writes (issues 42.8 and 46.4).

The cases, each ending exit 0 before: `--out inventory.toml` in place on an FP8 deployment turned the owners'
`kv_cache_dtype = "bfloat16"` into `"fp8"` (the fault became the rule, the faulty smoke GREEN), with no backup; it
overwrote any other file and wrote through a link; a declared `memory_total_mib_min = 90000` became the reading
97887 without a line saying so; a snapshot that read nothing still wrote `--out`."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from llmval.__main__ import main
from llmval.cli.snapshot import diff, placeholder_paths, render_diff, take
from llmval.core.files import WriteRefused, write_new
from llmval.inventory import load_inventory
from llmval.report.exitcodes import ExitCode
from selftest.strategies import ROOT

REPLAYS = ROOT / "selftest" / "data" / "replays"
KPRO6_HOSTS = REPLAYS / "hosts" / "SYNTHESIZED-kpro6-healthy"
KPRO6_FP8 = [KPRO6_HOSTS, REPLAYS / "SYNTHESIZED-kpro6-sglang-fp8-kv"]
H200_FP8 = [REPLAYS / "REAL-h200-sglang-0.5.17-fp8kv"]  # SGLang 0.5.17 on an H200 run with --kv-cache-dtype fp8


def _seed(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Path:
    text = (ROOT / "inventories" / f"{name}.toml").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def _snapshot(inventory: Path, replays: list[Path], *more: str) -> int:
    return main(["snapshot", "--inventory", str(inventory), *(f"--replay={r}" for r in replays), *more])


@pytest.mark.parametrize(("seed", "replays"), [
    ("kpro6", KPRO6_FP8),  # SYNTHESIZED: kpro6's SGLang with FP8 KV (the issue's case; its rule has a comment)
    ("h200-sglang", H200_FP8),  # REAL
])
def test_a_contradicted_rule_is_kept_with_the_reading_beside_it(tmp_path, capsys, seed, replays):
    inventory = _seed(tmp_path, seed)
    out = tmp_path / "observed.toml"
    assert _snapshot(inventory, replays, "--out", str(out)) == 0
    said = capsys.readouterr().out
    assert "DIFFERS            endpoints[" in said and ".expect.kv_cache_dtype: declared 'bfloat16', observed 'fp8': " \
        "contradicts the contract; kept as declared" in said
    written = load_inventory(out)
    assert all(e.expect.kv_cache_dtype == "bfloat16" for e in written.endpoints if e.expect is not None)
    [line] = [line for line in out.read_text().splitlines() if line.startswith("kv_cache_dtype")]
    assert line.startswith('kv_cache_dtype = "bfloat16"') and \
        '# observed by llmval snapshot: "fp8" contradicts the contract (' in line
    declared = [line for line in inventory.read_text().splitlines() if line.startswith("kv_cache_dtype")]
    assert line.startswith(declared[0])  # the owners' own comment kept, the reading after it


def test_a_minimum_that_holds_stays_as_declared_and_says_the_reading(tmp_path, capsys):
    inventory = _seed(tmp_path, "kpro6", ("memory_total_mib_min = 97000", "memory_total_mib_min = 90000"))
    out = tmp_path / "observed.toml"
    assert _snapshot(inventory, [KPRO6_HOSTS], "--out", str(out)) == 0
    said = capsys.readouterr().out
    assert "  confirmed          hosts[kpro6-ct129].gpus.memory_total_mib_min: 90000 kept as declared (read 97887)" \
        "  [kpro6-ct129: nvidia-smi --query-gpu]" in said
    assert tomllib.loads(out.read_text())["hosts"][1]["gpus"]["memory_total_mib_min"] == 90000


def test_every_value_written_is_listed_with_old_new_and_source(tmp_path, capsys):
    """Each value --out holds other than declared is one line of the output (key, old -> new, [source]), and the
    count in the last line is theirs."""
    inventory = _seed(tmp_path, "kpro6")
    out = tmp_path / "observed.toml"
    assert _snapshot(inventory, KPRO6_FP8, "--out", str(out)) == 0
    said = capsys.readouterr().out
    _, snap = take(inventory, KPRO6_FP8)
    changes = diff(snap, placeholder_paths(inventory.read_text()))
    rewritten = [c for c in changes if c.rewrites]
    assert {c.path for c in rewritten} >= {"hosts[kpro6-ct129].gpus.driver_min", "hosts[kpro6-ct129].gpus.uuids"}
    for c in rewritten:
        old = "(not declared)" if c.declared is None else repr(c.declared)
        assert f" {c.path}: {old} -> {c.observed!r}" in said and f"[{c.source}]" in said
    assert f"wrote {out}: {len(rewritten)} value(s) written from readings" in said
    before, after = tomllib.loads(inventory.read_text()), tomllib.loads(out.read_text())
    assert after["hosts"][1]["gpus"]["driver_min"] == "580.82.07" != before["hosts"][1]["gpus"]["driver_min"]
    assert render_diff(changes) in said


def test_the_counts_add_up_to_the_lines_and_a_changed_value_is_never_called_confirmed(tmp_path, capsys):
    """A new user counts the lines: before, 13 `placeholder filled` and 3 `added` lines ended in "4 value(s) written
    from readings (listed above as placeholder filled or added)", the changed `driver_min` read "(confirmed)", and
    `env.source`, read in two places, was two lines."""
    inventory = _seed(tmp_path, "kpro6")
    out = tmp_path / "observed.toml"
    assert _snapshot(inventory, [KPRO6_HOSTS, REPLAYS / "SYNTHESIZED-kpro6-sglang-healthy"], "--out", str(out)) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = [line for line in lines if line.startswith(("  placeholder filled", "  added"))]
    kept = [line for line in listed if line.split("  [", 1)[0].endswith("(confirmed: the value stays)")]
    changed = [line for line in listed if line not in kept]
    assert any("gpus.driver_min: '580.65.06' -> '580.82.07'  [" in line for line in changed)
    assert len(changed) == 4 and len(kept) == 11
    assert lines[-1].startswith(f"wrote {out}: {len(changed)} value(s) written from readings (the placeholder filled "
                                f"and added lines above with a new value), {len(kept)} placeholder(s) confirmed")
    keys = [line[len("  placeholder filled "):].split(": ", 1)[0] for line in lines
            if line.startswith(("  placeholder filled", "  added", "  confirmed", "  DIFFERS"))]
    assert len(keys) == len(set(keys))  # one key, one line
    assert any("env.source:" in line and "the GPU holders' unit; kpro6-ct129: unit sglang.service]" in line
               for line in kept)


@pytest.mark.parametrize("spelled", ["same", "dot", "hardlink", "symlink"])
def test_the_inventory_read_is_never_written_over_even_with_force(tmp_path, capsys, spelled):
    inventory = _seed(tmp_path, "kpro6")
    before = inventory.read_bytes()
    out = {"same": inventory, "dot": tmp_path / "." / inventory.name, "hardlink": tmp_path / "again.toml",
           "symlink": tmp_path / "link.toml"}[spelled]
    if spelled == "hardlink":
        os.link(inventory, out)
    if spelled == "symlink":
        out.symlink_to(inventory.name)
    assert _snapshot(inventory, KPRO6_FP8, "--out", str(out), "--force") == int(pytest.ExitCode.USAGE_ERROR)
    err = capsys.readouterr().err
    assert f"--out {out}: " in err and "nothing written" in err
    assert ("never written through" if spelled == "symlink" else "the file it was read from") in err
    assert inventory.read_bytes() == before and not list(tmp_path.glob("*.bak-*")) and not list(tmp_path.glob(".*tmp"))


def test_an_existing_file_is_kept_without_force_and_backed_up_with_it(tmp_path, capsys):
    inventory = _seed(tmp_path, "kpro6")
    other = tmp_path / "notes.toml"
    other.write_text("# the owners' notes\n")
    assert _snapshot(inventory, KPRO6_FP8, "--out", str(other)) == int(pytest.ExitCode.USAGE_ERROR)
    assert "exists: never written over without --force" in capsys.readouterr().err
    assert other.read_text() == "# the owners' notes\n"
    assert _snapshot(inventory, KPRO6_FP8, "--out", str(other), "--force") == 0
    [backup] = tmp_path.glob("notes.toml.bak-*")
    assert backup.read_text() == "# the owners' notes\n" and f"the file it replaced is {backup}" in \
        capsys.readouterr().out
    load_inventory(other)


def test_a_link_elsewhere_is_never_written_through(tmp_path, capsys):
    inventory = _seed(tmp_path, "kpro6")
    target = tmp_path / "elsewhere.txt"
    target.write_text("not ours\n")
    link = tmp_path / "observed.toml"
    link.symlink_to(target)
    assert _snapshot(inventory, KPRO6_FP8, "--out", str(link), "--force") == int(pytest.ExitCode.USAGE_ERROR)
    assert "a symbolic link (to " in capsys.readouterr().err
    assert target.read_text() == "not ours\n" and link.is_symlink()


def test_a_snapshot_that_reads_nothing_fails_and_writes_nothing(tmp_path, capsys):
    """kpro6's inventory answered from the local engine's recording: no host, no endpoint answers."""
    inventory = _seed(tmp_path, "kpro6")
    out = tmp_path / "observed.toml"
    assert _snapshot(inventory, [REPLAYS / "local-smoke-real"], "--out", str(out)) == ExitCode.COULD_NOT_CHECK
    captured = capsys.readouterr()
    assert "could not read     kpro6-ct129 gpus: " in captured.out
    assert f"nothing could be read from {REPLAYS / 'local-smoke-real'}" in captured.err
    assert f"{out} not written" in captured.err and not out.exists()


def test_write_new_is_atomic_and_keeps_the_mode(tmp_path):
    path = tmp_path / "a.toml"
    assert write_new(path, "x = 1\n") is None and path.read_text() == "x = 1\n"
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()
    path.chmod(0o640)
    backup = write_new(path, "x = 2\n", replace=True)
    assert backup is not None and backup.read_text() == "x = 1\n" and path.read_text() == "x = 2\n"
    assert path.stat().st_mode & 0o777 == 0o640
    with pytest.raises(WriteRefused, match="exists"):
        write_new(path, "x = 3\n")
    (tmp_path / "dir").mkdir()
    with pytest.raises(WriteRefused, match="a folder, not a regular file"):
        write_new(tmp_path / "dir", "x = 4\n", replace=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.toml", backup.name, "dir"]  # no temporary left


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
