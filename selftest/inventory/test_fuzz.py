"""The inventory fuzzer (issue 12.5): mutated shipped inventories are refused with exit 4 or accepted.

Mutations (selftest/strategies.py `fuzzed_inventories`): retyped values (option-shaped and shell-shaped
strings, control characters, unicode, 70k-character strings, 2^64, inf, NaN, nested tables), deleted keys,
duplicated list items (ids), unknown keys, and TOML-level damage (truncation, stray bytes, a BOM, repeated
lines, 700-deep arrays, invalid UTF-8). Laws: `python -m llmval check-inventory` never raises, exits 0 or 4,
and a refusal names the file and key paths in printable, bounded lines; pytest agrees with it (exit 4 on
the same files) and every accepted inventory collects.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, note

from selftest.inventory.check import check_inventory
from selftest.strategies import FUZZ_CANARY, ROOT, fuzzed_inventories, fuzzed_inventory_bytes

COLLECT_SAMPLE_SEEDS = range(40)
"""Seeds of the fixed sample whose files are also collected by pytest (one subprocess for all of them)."""
COLLECT_ACCEPTED, COLLECT_REFUSED = 5, 3

COLLECT_DRIVER = """
import sys, pytest
root, reports, *paths = sys.argv[1:]
for path in paths:
    code = pytest.main(["-p", "no:cacheprovider", "-p", "no:xdist", "-q", "--collect-only", "--rootdir", root, "-c",
                        root + "/pyproject.toml", "--reports", reports, "--inventory=" + path, root + "/tests"])
    print("LLMVAL-FUZZ-RC", int(code), path, flush=True)
"""


def _assert_refusal_is_readable(path: Path, output: str) -> None:
    lines = output.splitlines()
    assert lines[0] == f"invalid inventory {path}:", output
    assert 2 <= len(lines) <= 40, output
    assert all(len(line) <= 700 for line in lines), output
    assert all(c.isprintable() for c in output.replace("\n", "")), output  # control characters escaped
    assert "<top level>" not in output and "Traceback" not in output


@given(raw=fuzzed_inventories())
def test_fuzzed_inventory_is_refused_with_exit_4_or_accepted(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / "inventory.toml"
    path.write_bytes(raw)
    code, output = check_inventory(path)  # an exception escaping here is the traceback the law forbids
    note(output)
    assert code in (0, 4), output
    if code == 4:
        _assert_refusal_is_readable(path, output)
    assert not Path(FUZZ_CANARY).exists()


@pytest.mark.subprocess
def test_pytest_agrees_with_check_inventory_and_accepted_inventories_collect(tmp_path):
    verdicts: dict[Path, int] = {}
    for seed in COLLECT_SAMPLE_SEEDS:
        path = tmp_path / f"fuzz-{seed}.toml"
        path.write_bytes(fuzzed_inventory_bytes(random.Random(seed)))
        verdicts[path] = check_inventory(path)[0]
    accepted = [p for p, code in verdicts.items() if code == 0][:COLLECT_ACCEPTED]
    refused = [p for p, code in verdicts.items() if code == 4][:COLLECT_REFUSED]
    assert accepted and refused, verdicts  # the sample exercises both outcomes
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LLMVAL_"))}
    run = subprocess.run([sys.executable, "-c", COLLECT_DRIVER, str(ROOT), str(tmp_path / "reports"),
                          *map(str, accepted + refused)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=env)
    output = run.stdout + run.stderr
    where = max(output.find("Traceback"), output.find("INTERNALERROR"))
    codes = {Path(line.split(" ", 2)[2]): int(line.split()[1])
             for line in run.stdout.splitlines() if line.startswith("LLMVAL-FUZZ-RC ")}
    assert where < 0, output[max(0, where - 1500):where + 3000]
    assert codes == {p: verdicts[p] for p in accepted + refused}, output[-3000:]
    assert not Path(FUZZ_CANARY).exists()
