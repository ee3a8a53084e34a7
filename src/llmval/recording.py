"""Record every host command and HTTP exchange of a run, and answer them again offline.

A recording is a folder of JSON-lines files: `commands-<pid>.jsonl` and `http-<pid>.jsonl` (one per
process, so xdist workers never share a file). `Replay` loads a folder and answers each request from
the recorded ones with the same key, in recorded order; once a key's answers are used up it repeats
the last, because a replayed run may ask the same thing more often than the recorded one did.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .contract import redact
from .errors import ReplayMiss


@dataclass(frozen=True)
class CommandResult:
    """What one command did on one host."""

    host: str
    command: str
    rc: int
    stdout: str
    stderr: str
    duration_s: float = 0.0
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    @property
    def failure(self) -> str:
        """`exit code N: <the end of stderr>`, or of stdout when stderr is empty (nvidia-smi prints "No devices
        were found" on stdout with exit 6): the command's own words, never an empty cause."""
        said = self.stderr.strip() or self.stdout.strip()
        return f"exit code {self.rc}: {said[-400:]}" if said else f"exit code {self.rc} (no output)"


@dataclass(frozen=True)
class HttpExchange:
    """One HTTP request and its full response (a streamed body is kept whole)."""

    method: str
    url: str
    request_body_sha256: str
    request_body: str
    status: int
    headers: list[tuple[str, str]]
    body_b64: str
    elapsed_s: float = 0.0
    error: str | None = None
    """Set when the request failed without a response (connect error, timeout)."""

    @property
    def body(self) -> bytes:
        return base64.b64decode(self.body_b64)


def body_key(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@dataclass
class Recorder:
    """Appends commands and HTTP exchanges of this process to a recording folder."""

    folder: Path
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)

    def _append(self, stem: str, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock, open(self.folder / f"{stem}-{os.getpid()}.jsonl", "a", encoding="utf-8") as out:
            out.write(line)

    def command(self, result: CommandResult) -> None:
        """Record one command, its output redacted (a process environment read from /proc holds API keys)."""
        record = asdict(result)
        record["stdout"], record["stderr"] = redact(result.stdout), redact(result.stderr)
        self._append("commands", record)

    def http(self, exchange: HttpExchange) -> None:
        self._append("http", asdict(exchange))


class Replay:
    """Answers commands and HTTP requests from a recording folder."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._commands: dict[tuple[str, str], list[CommandResult]] = defaultdict(list)
        self._http: dict[tuple[str, str, str], list[HttpExchange]] = defaultdict(list)
        self._used: dict[tuple, int] = defaultdict(int)
        self._lock = threading.Lock()
        if not folder.is_dir():
            raise ReplayMiss(f"--replay {folder}: not a folder")
        for path in sorted(folder.glob("commands*.jsonl")):
            for record in _read_jsonl(path):
                result = CommandResult(**record)
                self._commands[(result.host, result.command)].append(result)
        for path in sorted(folder.glob("http*.jsonl")):
            for record in _read_jsonl(path):
                record["headers"] = [tuple(h) for h in record["headers"]]
                exchange = HttpExchange(**record)
                self._http[(exchange.method, exchange.url, exchange.request_body_sha256)].append(exchange)
        if not self._commands and not self._http:
            raise ReplayMiss(f"--replay {folder}: no commands*.jsonl or http*.jsonl in it")

    def _next(self, table: dict, key: tuple):
        answers = table.get(key)
        if not answers:
            return None
        with self._lock:
            index = min(self._used[key], len(answers) - 1)
            self._used[key] += 1
        return answers[index]

    def command(self, host: str, command: str) -> CommandResult:
        result = self._next(self._commands, (host, command))
        if result is None:
            known = sorted(c for h, c in self._commands if h == host)
            raise ReplayMiss(
                f"[{host}] the recording {self.folder} has no answer for command: {command[:200]}\n"
                f"  it has {len(known)} commands for this host"
                + (f", e.g. {known[0][:120]!r}" if known else "")
            )
        return result

    def http(self, method: str, url: str, body: bytes) -> HttpExchange:
        exchange = self._next(self._http, (method, url, body_key(body)))
        if exchange is None:
            raise ReplayMiss(f"the recording {self.folder} has no answer for {method} {url}")
        return exchange

    @property
    def hosts(self) -> set[str]:
        return {host for host, _ in self._commands}


def _read_jsonl(path: Path):
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as error:
                raise ReplayMiss(f"{path}:{number}: not JSON ({error})") from None
