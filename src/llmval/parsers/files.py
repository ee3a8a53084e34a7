"""File listings and checksums: `find -printf '%s %T@ %p\\n'` and `sha256sum` output.

    >>> parse_find_listing("119 1700000000.5 /m/a.safetensors\\n")
    {'/m/a.safetensors': (119, '1700000000.5')}
    >>> parse_sha256sum("%s  /m/a b\\n" % ("0" * 64))
    {'/m/a b': '0000000000000000000000000000000000000000000000000000000000000000'}
"""

from __future__ import annotations

import re

from ..core.errors import ParseError

SHA256SUM_RE = re.compile(r"^\\?(?P<sha>[0-9a-f]{64}) [ *](?P<path>.+)$")
FIND_RE = re.compile(r"^(?P<size>\d+) (?P<mtime>\d+(?:\.\d+)?) (?P<path>.+)$")


def parse_find_listing(text: str) -> dict[str, tuple[int, str]]:
    """path → (size in bytes, mtime as printed) from `find ... -printf '%s %T@ %p\\n'`."""
    files = {}
    for line in text.splitlines():
        if not line:
            continue
        match = FIND_RE.match(line)
        if match is None:
            raise ParseError("find -printf listing", "expected `<size> <mtime> <path>`", line)
        files[match["path"]] = (int(match["size"]), match["mtime"])
    return files


def parse_sha256sum(text: str) -> dict[str, str]:
    """path → hex digest from `sha256sum FILE...`."""
    sums = {}
    for line in text.splitlines():
        if not line:
            continue
        match = SHA256SUM_RE.match(line)
        if match is None:
            raise ParseError("sha256sum", "expected `<64 hex>  <path>`", line)
        sums[match["path"]] = match["sha"]
    return sums
