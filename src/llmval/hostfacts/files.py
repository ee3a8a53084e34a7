"""Model files: listings (size, mtime) and sha256 sums, compared across the hosts of a group.

sha256 sums are cached by (host, path, size, mtime) in a JSON file with the controller (never on a host),
so an unchanged 119 GB model is not re-hashed every night.
"""

from __future__ import annotations

import concurrent.futures
import fcntl
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import CommandFailed, LlmvalError, ParseError
from ..core.files import read_regular_text
from ..core.jsontext import read_json
from ..inventory import HostSpec, ModelFileSpec
from ..parsers.files import parse_find_listing, parse_sha256sum
from ._command import PATH, Command
from ._fact import HostFacts, Reader, fact, failure_text

FILE_LIST = Command("file-list", "find -L {path} -type f -printf '%s %T@ %p\\n'", path=PATH)
SHA256 = Command("sha256", "sha256sum -- {paths*}", paths=PATH)


@fact(FILE_LIST, section="model_files", checks="hosts.model_files.*",
      needs=lambda h: [(m.path,) for m in h.model_files])
def file_listing(host: Reader, path: str) -> dict[str, tuple[int, str]]:
    """Files under `path` (following symlinks): path → (size, mtime); empty when `path` is missing."""
    return parse_find_listing(host.result(FILE_LIST, path=path).stdout)


@fact(SHA256, section="model_files.group", needs=lambda h: False)
def file_hashes(host: Reader, paths: tuple[str, ...], timeout_s: float) -> dict[str, str]:
    """sha256 of each file (one bounded `sha256sum` for all of them). Read on demand, never prefetched."""
    result = host.result(SHA256, paths=sorted(paths), timeout_s=timeout_s)
    if result.rc != 0:
        raise CommandFailed(host.name, result.command, failure_text(result))
    return parse_sha256sum(result.stdout)


@dataclass(frozen=True, order=True)
class FileDigest:
    relpath: str
    size: int
    sha256: str | None


class HashCache:
    """sha256 sums by (host, path, size, mtime) in a JSON file under reports/, so an unchanged 119 GB model
    is not re-hashed every night. The file lives with the controller, never on a host (checks stay read-only)."""

    def __init__(self, path: Path | None):
        self.path = path

    def _locked(self, update: Callable[[dict], None] | None = None) -> dict:
        if self.path is None:
            return {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                data = read_json(read_regular_text(self.path, 64 * 2**20), str(self.path), max_chars=64 * 2**20,
                                 max_values=4_000_000) \
                    if self.path.exists() else {}
            except (ParseError, UnicodeDecodeError, OSError):  # a cache: one not read is rebuilt
                data = {}
            if update is not None:
                update(data)
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
                tmp.replace(self.path)
            return data

    @staticmethod
    def key(host: str, path: str, size: int, mtime: str) -> str:
        return f"{host}|{path}|{size}|{mtime}"

    def get(self) -> dict:
        return self._locked()

    def put(self, entries: dict[str, str]) -> None:
        if entries:
            self._locked(lambda data: data.update(entries))


def model_digests(facts: HostFacts, spec: ModelFileSpec, cache: HashCache, *, with_hashes: bool) -> list[FileDigest]:
    """Size (and sha256, when asked) of every file under `spec.path`; hashes come from the cache when the
    file's size and mtime are unchanged, else from one bounded `sha256sum` on the host."""
    listing = facts.file_listing(spec.path)
    root = spec.path.rstrip("/") + "/"
    relative = {path: (path[len(root):] if path.startswith(root) else path) for path in listing}
    if not with_hashes:
        return sorted(FileDigest(relative[p], size, None) for p, (size, _) in listing.items())
    known = cache.get()
    digests: dict[str, str] = {}
    todo = []
    for path, (size, mtime) in listing.items():
        cached = known.get(HashCache.key(facts.name, path, size, mtime))
        if cached:
            digests[path] = cached
        else:
            todo.append(path)
    if todo:
        fresh = facts.file_hashes(tuple(sorted(todo)), spec.hash_timeout_s)
        digests.update(fresh)
        cache.put({HashCache.key(facts.name, p, *listing[p]): sha for p, sha in fresh.items() if p in listing})
    return sorted(FileDigest(relative[p], listing[p][0], digests.get(p)) for p in listing)


def group_digests(members: list[tuple[HostSpec, HostFacts, ModelFileSpec]], cache: HashCache, *,
                  with_hashes: bool) -> dict[str, list[FileDigest] | LlmvalError]:
    """Digests of every member host, computed on all hosts at once (one thread per host)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(members))) as pool:
        futures = {host.name: pool.submit(model_digests, facts, spec, cache, with_hashes=with_hashes)
                   for host, facts, spec in members}
    out: dict[str, list[FileDigest] | LlmvalError] = {}
    for name, future in futures.items():
        try:
            out[name] = future.result()
        except LlmvalError as error:
            out[name] = error
    return out


def digest_differences(reference: list[FileDigest], other: list[FileDigest]) -> list[str]:
    """Human-readable differences between two listings (missing, extra, size, sha256), sorted."""
    ref = {d.relpath: d for d in reference}
    oth = {d.relpath: d for d in other}
    out = [f"missing {p}" for p in sorted(ref.keys() - oth.keys())]
    out += [f"extra {p}" for p in sorted(oth.keys() - ref.keys())]
    for p in sorted(ref.keys() & oth.keys()):
        a, b = ref[p], oth[p]
        if a.size != b.size:
            out.append(f"{p}: size {b.size} != {a.size}")
        elif a.sha256 != b.sha256:
            out.append(f"{p}: sha256 {(b.sha256 or '?')[:12]}… != {(a.sha256 or '?')[:12]}…")
    return out


@dataclass(frozen=True)
class GroupVerdict:
    subject: str
    """The differing hosts (comma-joined), or the reference host when all agree."""
    reference: str
    files: int
    differences: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return not self.differences


def compare_group(members: list[tuple[HostSpec, HostFacts, ModelFileSpec]], cache: HashCache, *,
                  with_hashes: bool) -> GroupVerdict:
    """Listings of all members at once; the reference is the listing most hosts share (ties: inventory order).
    A member that cannot be read raises its LlmvalError (the group cannot be judged)."""
    listings = group_digests(members, cache, with_hashes=with_hashes)
    for value in listings.values():
        if isinstance(value, LlmvalError):
            raise value
    readable: dict[str, list[FileDigest]] = {n: v for n, v in listings.items() if not isinstance(v, LlmvalError)}
    values = list(readable.values())
    counts = [values.count(v) for v in values]
    reference = list(readable)[counts.index(max(counts))]
    diffs = {n: digest_differences(readable[reference], v) for n, v in readable.items()}
    odd = {n: d[:5] + ([f"... {len(d) - 5} more"] if len(d) > 5 else []) for n, d in diffs.items() if d}
    return GroupVerdict(",".join(odd) or reference, reference, len(readable[reference]), odd)
