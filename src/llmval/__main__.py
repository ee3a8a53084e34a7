"""`python -m llmval check-inventory FILE...` validates inventories with the same validation pytest runs
(exit 0: all valid; 4: an invalid one, as pytest's usage error); `python -m llmval schema` prints the
inventory's JSON Schema (committed as inventories/inventory.schema.json for editors); `python -m llmval bench`
calibrates the perf instruments (`--calibrated`, `--ceiling`)."""

from __future__ import annotations

import argparse
import sys

import pytest

from .errors import InventoryError
from .inventory import inventory_json_schema, load_inventory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmval", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("schema", help="print the inventory JSON Schema")
    check = commands.add_parser("check-inventory", help="validate inventory files")
    check.add_argument("paths", nargs="+")
    commands.add_parser("bench", add_help=False,
                        help="calibrate the perf instruments (--calibrated, --ceiling; see bench --help)")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:  # its own parser (`python -m llmval bench --help`)
        from .bench._cli import main as bench_main

        return bench_main(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "schema":
        sys.stdout.write(inventory_json_schema())
        return 0
    status = 0
    for path in args.paths:
        try:
            inventory = load_inventory(path)
        except InventoryError as error:
            print(error, file=sys.stderr)
            status = int(pytest.ExitCode.USAGE_ERROR)
        else:
            print(f"{path}: ok ({len(inventory.hosts)} hosts, {len(inventory.endpoints)} endpoints)")
    return status


if __name__ == "__main__":
    sys.exit(main())
