"""Run every crafted recording of `shapes.SHAPES` through the real `pytest --replay` (kpro6, smoke, collect
only) and print, per shape: exit code, seconds, whether the output names `file:line`, and whether a traceback
or an INTERNALERROR shows. `python -m selftest.recording.probe [--timeout S]`."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selftest.recording.shapes import SHAPES

ROOT = Path(__file__).resolve().parents[2]


def probe(name: str, timeout_s: float) -> tuple[str, float, bool, bool, str]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "rec"
        folder.mkdir()
        where = SHAPES[name](folder)
        started = time.monotonic()
        try:
            run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only",
                                  "-m", "smoke", f"--inventory={ROOT / 'inventories' / 'kpro6.toml'}",
                                  "--reports", str(Path(tmp) / "reports"), "--replay", str(folder)],
                                 cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return "hang", time.monotonic() - started, False, False, ""
        out = run.stdout + run.stderr
        broken = "Traceback" in out or "INTERNALERROR" in out
        first = next((line for line in out.splitlines() if "recording" in line or "ERROR" in line), "")
        return str(run.returncode), time.monotonic() - started, where in out, broken, first[:150]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=20)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    held = 0
    for name in args.names or SHAPES:
        rc, seconds, named, broken, first = probe(name, args.timeout)
        ok = rc == "4" and named and not broken
        held += ok
        print(f"{'held' if ok else 'FAIL':4} {name:34} rc={rc:4} {seconds:5.1f}s names-place={named!s:5} "
              f"traceback={broken!s:5} {first}", flush=True)
    print(f"{held}/{len(args.names or SHAPES)} held (exit 4, file:line named, no traceback)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
