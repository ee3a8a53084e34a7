"""The inventory's stop steps, run by the launch watchdog after the suite was killed without tearing down.

The watchdog (`_watchdog.py`) ends the suite's own process groups itself; what the start steps handed to systemd or
docker (kpro6's `systemctl start` in CT 129, the Sparks' `docker run -d`) only the inventory's stop steps end. It
runs them with this module, as teardown would have (`Stack.stop()`: every stop step even after a failure, the
destructive ones only when the run had --allow-destructive, the port freed), its logs and `summary.json` in
`<launch log folder>/after-kill/`:

    python -m llmval.launch._after_kill --inventory PATH --launch-id ID --log-dir DIR [--cwd DIR] [--allow-destructive]

(`Stack.after_kill_command()` writes that line for the watchdog.)

Exit 0 when teardown left nothing, 1 when it left problems (printed), 4 when the inventory no longer loads.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.contract import add_secrets
from ..core.errors import InventoryError
from ..core.secrets import inventory_secret_values
from ..inventory import load_inventory
from ..io.transport import connect
from ._errors import TeardownError
from ._stack import Stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run a killed --launch run's stop steps")
    parser.add_argument("--inventory", type=Path, required=True)
    parser.add_argument("--launch-id", required=True)
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--cwd", type=Path, default=None)
    parser.add_argument("--allow-destructive", action="store_true")
    args = parser.parse_args(argv)
    try:
        inventory = load_inventory(args.inventory)
    except InventoryError as error:
        print(f"[launch] after kill: cannot run the stop steps: {error}", flush=True)
        return 4
    add_secrets(inventory_secret_values(inventory.model_dump(mode="json")))  # the logs never show one
    stack = Stack(inventory, lambda name: connect(inventory.host(name), inventory=inventory), args.log_dir,
                  allow_destructive=args.allow_destructive, say=lambda line: print(line, flush=True), cwd=args.cwd)
    stack.adopt(args.launch_id)
    try:
        stack.stop()
    except TeardownError as error:
        print(f"[launch] after kill: {error}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
