"""Writing the reports: atomically, never through a planted link (issue 23.5).

The suite often runs as root, and the reports folder may be shared: a `status.md` planted as a symlink to
/etc/shadow must not be written through, and a full or read-only disk must not leave a half-written
`results.json` or `history/results-*.json` behind. So:

- `check_reports_dir(folder)` runs before any check: the folder is (or becomes) a directory we can create
  files in, its `history/` too; otherwise one `ReportsNotWritable` naming the folder and why (exit 4).
- `write_report(path, text)` writes `text` to a new temporary file beside `path` (`O_CREAT | O_EXCL`, never
  following a link), flushes it to disk, and renames it over `path`: a link planted at `path` is replaced, its
  target untouched; on any error the temporary file is removed and `path` is what it was before. It redacts
  nothing: a report is made from typed results whose text was redacted once, when it was made
  (llmval.core.verdict; pytest's own text in fixtures/reporting.py; inventory text as the status document shows it).
- `unlink_planted_link(path)` removes a symlink where pytest's junitxml (which opens its path itself) would
  write, so junit too replaces a link instead of writing through it.
- `reports_lock(folder)` is held while a run writes its set (results.json and its history copy, status.md,
  report.html, junit.xml): two runs on one folder write one set after the other, never interleaved (unlocked,
  one run's results.json and status.md could sit beside the other's junit.xml); a reader that takes it
  `shared` sees one run's set whole.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> write_report(folder / "status.md", "GREEN").read_text()
    'GREEN'
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..core.errors import LlmvalError


class ReportsNotWritable(LlmvalError):
    """The reports folder (or a report in it) cannot be written: not a folder, read-only, full."""


def _refuse(folder: Path, why: str) -> ReportsNotWritable:
    return ReportsNotWritable(f"the reports folder {folder} cannot be written: {why}; pass --reports DIR naming "
                              "a folder this user can write")


def check_reports_dir(folder: Path, subfolders: Iterable[str] = ("history",)) -> None:
    """Make sure reports can be written into `folder` (created when missing) and its `subfolders`."""
    folder = Path(folder)
    for target in [folder, *(folder / name for name in subfolders)]:
        if target.is_symlink() and target != folder:
            raise _refuse(folder, f"{target.name} is a symbolic link")
        if target.exists() and not target.is_dir():
            raise _refuse(folder, f"{target} exists and is not a folder")
        try:
            target.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=target, prefix=".llmval-probe-"):
                pass
        except OSError as error:
            raise _refuse(folder, f"{type(error).__name__}: {error.strerror or error}") from None


def write_report(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically (temp file + rename); a link at `path` is replaced. What UTF-8 cannot
    encode (a lone surrogate from a server's JSON) is written as its escape, `\\ud800`."""
    return write_bytes(path, text.encode("utf-8", "backslashreplace"))


def write_bytes(path: Path, data: bytes) -> Path:
    """`data` to `path` atomically: a new file beside it, flushed, renamed over it (never through a link)."""
    path = Path(path)
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise _refuse(path.parent, f"cannot create a file there ({error.strerror or error})") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise _refuse(path.parent, f"writing {path.name} failed ({error.strerror or error}); the previous "
                                   f"{path.name} is left as it was") from None
    return path


def remove_stale(paths: Iterable[Path]) -> list[Path]:
    """Remove the previous run's reports at `paths` (when this run's cannot be written, an old GREEN must not be
    read as this run's); the ones removed."""
    removed = []
    for path in map(Path, paths):
        with contextlib.suppress(OSError):
            if path.is_symlink() or path.is_file():
                path.unlink()
                removed.append(path)
    return removed


LOCK_FILE = ".llmval-reports.lock"
"""The lock file in a reports folder (an empty file; the lock is `flock` on it, released when its holder exits)."""
LOCK_WAIT_S = 300.0
"""How long a run waits for another run on the same folder to finish writing its reports (a few seconds each)."""


@contextlib.contextmanager
def reports_lock(folder: Path, *, shared: bool = False, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold the lock on reports folder `folder` (exclusive to write a set of reports, `shared` to read one);
    ReportsNotWritable naming the folder when it cannot be opened or another run keeps it past `wait_s`."""
    path = Path(folder) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise _refuse(Path(folder), f"its lock {LOCK_FILE} cannot be opened ({error.strerror or error})") from None
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _refuse(Path(folder), f"another run kept its lock {LOCK_FILE} for {wait_s:g} s "
                                  "while writing its reports") from None
                time.sleep(0.05)  # bounded polling: the holder releases it within seconds, or its exit does
        yield
    finally:
        os.close(fd)  # releases the lock


def unlink_planted_link(path: Path) -> None:
    """Remove a symbolic link at `path` (a report is a file we write, never a link we follow)."""
    path = Path(path)
    if path.is_symlink():
        path.unlink()


def plots_written_since(folder: Path, started: dt.datetime) -> list[str]:
    """The names of the plots (`*.png`, regular files) in `folder` written since `started`: the run's own, not an
    earlier run's NIAH or agentic heatmap left in the folder."""
    folder, since_ns = Path(folder), int(started.timestamp() * 1e9)
    if not folder.is_dir():
        return []
    plots = []
    for path in folder.glob("*.png"):
        with contextlib.suppress(OSError):
            if not path.is_symlink() and path.is_file() and path.stat().st_mtime_ns >= since_ns:
                plots.append(path.name)
    return sorted(plots)
