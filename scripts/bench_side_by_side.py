#!/usr/bin/env python3
"""Kept for old command lines: the same as `python -m llmval bench` (see `python -m llmval bench --help`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from llmval.bench import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
