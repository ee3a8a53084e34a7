"""Every file the suite reads is read here: a regular file, size-capped, never blocking (issue 32.2).

`--inventory /dev/zero` read until MemoryError, `--inventory` naming a FIFO hung the run before any check, and a
FIFO or a link to /dev/zero planted in reports/history/ hung the next run or ended it in `INTERNALERROR>
MemoryError` at 1.9 GB. `read_regular` opens without blocking (O_NONBLOCK: a FIFO with no writer opens at once),
refuses what `fstat` says is not a regular file (a FIFO, a device, a socket, a folder: a link is followed to
its target and judged by that), refuses a file over `max_bytes`, and reads at most `max_bytes + 1` bytes (a file
growing while read is refused too). Its refusal is an OSError whose strerror says why, as open()'s own are, so
every caller's "cannot read <path>: <why>" names it.

    >>> read_regular("/dev/zero", 10)
    Traceback (most recent call last):
    OSError: [Errno 22] a character device, not a regular file (the suite reads regular files only): '/dev/zero'
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def not_regular(mode: int) -> str | None:
    """What a file of `mode` is when it is not a regular file, else None."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in KINDS if test(mode)), "not a regular file")


def read_regular(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path` (a link followed), at most `max_bytes`; OSError saying why not."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if (what := not_regular(info.st_mode)) is not None:
            raise OSError(errno.EINVAL, f"{what}, not a regular file (the suite reads regular files only)", str(path))
        if info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"{info.st_size} bytes, over the {_size(max_bytes)} the suite reads of it",
                          str(path))
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise OSError(errno.EFBIG, f"grew over the {_size(max_bytes)} the suite reads of it while it was read",
                          str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: str | Path, max_bytes: int) -> str:
    """`read_regular` decoded as UTF-8 (UnicodeDecodeError as open().read() raises it)."""
    return read_regular(path, max_bytes).decode("utf-8")


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n} bytes"
