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


class WriteRefused(OSError):
    """`write_new` would have written over what it must not (an existing file without `replace`, a link, a file
    it was told to protect); its message says which and what to do."""


def write_new(path: str | Path, text: str, *, replace: bool = False,
              protect: tuple[str | Path, ...] = ()) -> Path | None:
    """Write `text` to `path` atomically (a temporary file beside it, renamed into place: a reader sees the old
    file or the new one, never half of one). Never through a symbolic link, never over a file of `protect` (the
    same file under any name: a link, a hard link, `./x`), never over an existing file unless `replace`, and
    then the old one is kept beside it first as `<name>.bak-<UTC time>`, which is returned (None: nothing was
    there). WriteRefused (an OSError) says why not."""
    import datetime as dt
    import tempfile

    path = Path(path)
    if path.is_symlink():
        raise WriteRefused(errno.ELOOP, f"a symbolic link (to {os.readlink(path)}): never written through; name "
                                        "a file of its own", str(path))
    for guarded in protect:
        if path.exists() and Path(guarded).exists() and os.path.samefile(path, guarded):
            raise WriteRefused(errno.EEXIST, f"the file it was read from ({guarded}): never written over; write "
                                             "elsewhere and compare", str(path))
    existing = os.stat(path) if path.exists() else None
    if existing is not None and (what := not_regular(existing.st_mode)) is not None:
        raise WriteRefused(errno.EEXIST, f"{what}, not a regular file", str(path))
    if existing is not None and not replace:
        raise WriteRefused(errno.EEXIST, "exists: never written over without --force (which keeps a backup "
                                         "beside it)", str(path))
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    backup = None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, existing.st_mode & 0o7777 if existing is not None else 0o666 & ~umask)
        if existing is None:
            os.link(temporary, path)  # FileExistsError where one appeared meanwhile: never replaced unasked
        else:
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            backup = path.with_name(f"{path.name}.bak-{stamp}")
            os.link(path, backup)  # the old file under a second name (FileExistsError: never over a backup)
            os.replace(temporary, path)
    except FileExistsError as error:
        raise WriteRefused(errno.EEXIST, "appeared while it was written: left as it is", error.filename) from None
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)
    return backup
