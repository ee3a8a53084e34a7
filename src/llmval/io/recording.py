"""Record every host command and HTTP exchange of a run, and answer them again offline.

A recording is one folder per run: `commands-<pid>.jsonl` and `http-<pid>.jsonl` (one file per process, so
xdist workers never share a file), each line one record (`CommandRecord`, `HttpRecord`). `--record DIR`
refuses a folder that already holds a recording: one folder is one run. `Replay` loads one or more folders
(`--replay A --replay B`: a host recording and a serving recording of the same deployment, merged) and
answers each request from the recorded ones with the same key, in recorded order; once a key's answers are
used up it repeats the last, because a replayed run may ask the same thing more often than the recorded one
did. Two folders that answer one key differently are an error, not a choice.

A recording is input like an inventory: it is validated whole before anything is replayed, and a bad one is
one `RecordingError` naming the file, the line and the reason (pytest: a usage error, exit 4). It holds
regular files only (no symlink, FIFO, device or folder under a recording file's name), at most
`MAX_FILE_BYTES` per file and `MAX_RECORDING_BYTES` in all; every line is a JSON object of the declared
fields with the declared types (no unknown key, no missing field, `body_b64` base64, finite durations); and,
since a recording is evidence of read-only commands, every recorded command has the argv shape of a command
family on the read-only allow-list (`llmval.io.command.is_read_only`: the host facts' declared commands,
put there when `llmval.hostfacts` is imported, as the package root does) and every HTTP request is a GET or a
POST to an http(s) URL.

A host command is answered by its family and arguments (`llmval.io.command.Rendered.key`: the recorded text
parsed back through the allow-list), so only a declared read is ever answered; a `--launch` step's own text
(`Connection.run_step`, no family) by its exact text.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import hashlib
import json
import os
import re
import shlex
import stat
import threading
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..core.contract import redact
from ..core.errors import ParseError, RecordingError, ReplayMiss
from ..core.files import read_regular
from ..core.jsontext import read_json
from .command import Key, Rendered, command_key, is_read_only


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


# ---- the format: one pydantic model per line kind ------------------------------------------------------

MAX_FILE_BYTES = 256 << 20
"""The largest recording file replayed (the committed ones are under 400 kB)."""
MAX_RECORDING_BYTES = 1 << 30
"""The most a recording (all its folders) may hold in all."""
MAX_LINE_BYTES = 128 << 20
"""The longest recording line replayed: the longest the suite writes is an HTTP answer at the 64 MiB body cap
(`io.bounded.MAX_BODY_BYTES`), 85.4 MiB in base64, with its other fields; a command's two streams are capped at
16 MiB each (`io.transport.MAX_OUTPUT_BYTES`; only streams of control characters, each escaped to 6 bytes, could
write more). A 250 MB line took 1,006 MiB RSS to replay before; a line is now refused before it is copied."""
RECORD_FILE_RE = re.compile(r"^(?P<kind>commands|http).*\.jsonl$")
"""The names `Replay` reads (`commands-<pid>.jsonl`, `http-<pid>.jsonl`; other files, e.g. READMEs, are left)."""

_LINE = ConfigDict(extra="forbid", strict=True, frozen=True)
_Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class CommandRecord(BaseModel):
    """One line of `commands-*.jsonl`: a command sent to a host and what it did (`CommandResult`)."""

    model_config = _LINE

    host: str = Field(min_length=1, max_length=253)
    command: str = Field(min_length=1)
    rc: int = Field(ge=-255, le=255)
    stdout: str
    stderr: str
    duration_s: _Seconds = 0.0
    timed_out: bool = False

    def result(self) -> CommandResult:
        return CommandResult(**self.model_dump())


class HttpRecord(BaseModel):
    """One line of `http-*.jsonl`: an HTTP request and its whole response (`HttpExchange`)."""

    model_config = _LINE

    method: Literal["GET", "POST"]
    """The suite reads with GET and asks the model with POST; nothing else is evidence of a read."""
    url: str = Field(pattern=r"^https?://[^\s]+$")
    request_body_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    request_body: str
    status: int = Field(ge=0, le=599)
    """The response's status; 0 when there was no response (then `error` says why)."""
    headers: list[tuple[str, str]]
    body_b64: str
    elapsed_s: _Seconds = 0.0
    error: str | None = None

    @field_validator("headers", mode="before")
    @classmethod
    def _pairs_as_tuples(cls, value: object) -> object:
        """JSON has no tuples: a header pair is read as a list (the strict model takes only tuples)."""
        return [tuple(pair) if isinstance(pair, list) else pair for pair in value] if isinstance(value, list) \
            else value

    @field_validator("body_b64")
    @classmethod
    def _is_base64(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("not base64 (the response body, base64-encoded)") from None
        return value

    @model_validator(mode="after")
    def _status_or_error(self) -> HttpRecord:
        if (self.status == 0) != (self.error is not None):
            raise ValueError("status 0 goes with an `error` (no response) and only with one")
        return self

    def exchange(self) -> HttpExchange:
        return HttpExchange(**{**self.model_dump(), "headers": [tuple(h) for h in self.headers]})


_MODELS: dict[str, type[BaseModel]] = {"commands": CommandRecord, "http": HttpRecord}


def _problem(error: ValidationError) -> str:
    """The first problem of a line, as a reader can act on it (the values themselves are not repeated)."""
    problems = []
    for err in error.errors(include_url=False, include_input=False)[:3]:
        where = ".".join(str(part) for part in err["loc"])
        kind, message = err["type"], err["msg"]
        if kind == "extra_forbidden":
            message = "unknown key"
        elif kind == "missing":
            message = "required key is missing"
        elif kind == "model_type":
            message = "a line must be one JSON object"
        elif kind == "json_invalid":
            message = f"not JSON: {message.removeprefix('Invalid JSON: ')}"
        message = message.removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


# ---- reading a folder ----------------------------------------------------------------------------------

_FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _not_regular(mode: int) -> str | None:
    return next((what for test, what in _FILE_KINDS if test(mode)), None if stat.S_ISREG(mode) else "not a file")


def _recording_files(folder: Path) -> list[tuple[str, Path]]:
    """(kind, path) of each recording file in `folder`, each a regular file (never followed through a link)."""
    if not folder.is_dir():
        raise RecordingError(str(folder), "not a folder (give the folder --record wrote)")
    found = []
    for path in sorted(folder.iterdir()):
        match = RECORD_FILE_RE.match(path.name)
        if match is None:
            continue
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            raise RecordingError(str(path), f"a symlink (to {os.readlink(path)}): a recording holds regular files "
                                 "only; copy the file in")
        if (what := _not_regular(mode)) is not None:
            raise RecordingError(str(path), f"{what}, not a regular file: a recording holds regular files only")
        found.append((match["kind"], path))
    return found


def _read_capped(path: Path, budget: int) -> bytes:
    """The bytes of regular file `path`, refused beyond `budget` bytes; never blocks or follows a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        reason = "a symlink" if error.errno == errno.ELOOP else error.strerror
        raise RecordingError(str(path), f"cannot open: {reason}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if (what := _not_regular(info.st_mode)) is not None:  # swapped since it was listed
            raise RecordingError(str(path), f"{what}, not a regular file: a recording holds regular files only")
        limit = min(budget, MAX_FILE_BYTES)
        if info.st_size > limit:
            raise RecordingError(str(path), f"{info.st_size} bytes, over the cap of {limit} (a file holds at most "
                                 f"{MAX_FILE_BYTES}, a recording {MAX_RECORDING_BYTES} in all)")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise RecordingError(str(path), f"grew over the cap of {limit} bytes while it was read")
    return data


def _lines(path: Path, data: bytes):
    """(line number, bytes) of each line of `data`, one at a time (never a copy of them all); a line over
    `MAX_LINE_BYTES` is refused, naming file and line, before it is copied or decoded."""
    start = number = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        if end - start > MAX_LINE_BYTES:
            raise RecordingError(f"{path}:{number}", f"a line of {end - start} bytes, over the {MAX_LINE_BYTES} "
                                 "of the longest line the suite records (refused, not read)")
        yield number, data[start:end]
        start = end + 1


def _records(kind: str, path: Path, data: bytes):
    """(line number, validated record) for each non-blank line of `data`."""
    model = _MODELS[kind]
    for number, raw in _lines(path, data):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RecordingError(f"{path}:{number}", f"not UTF-8 (byte 0x{raw[error.start]:02x} at column "
                                 f"{error.start + 1})") from None
        try:
            yield number, model.model_validate(read_json(text, f"{path}:{number}", max_chars=MAX_LINE_BYTES))
        except ParseError as error:
            raise RecordingError(f"{path}:{number}", error.reason) from None
        except ValidationError as error:
            raise RecordingError(f"{path}:{number}", _problem(error)) from None


@dataclass
class _Folder:
    """One recording folder, validated: its answers by key, and where each key was first recorded."""

    folder: Path
    commands: dict[tuple[str, str], list[CommandResult]] = field(default_factory=lambda: defaultdict(list))
    http: dict[tuple[str, str, str], list[HttpExchange]] = field(default_factory=lambda: defaultdict(list))
    size: int = 0

    @classmethod
    def load(cls, folder: Path, budget: int) -> _Folder:
        loaded = cls(folder)
        allowed: dict[str, bool] = {}
        for kind, path in _recording_files(folder):
            data = _read_capped(path, budget - loaded.size)
            loaded.size += len(data)
            for number, record in _records(kind, path, data):
                if isinstance(record, CommandRecord):
                    if not allowed.setdefault(record.command, is_read_only(record.command)):
                        raise RecordingError(f"{path}:{number}", f"command not on the read-only allow-list "
                                             f"(llmval.hostfacts): {record.command[:200]!r}; a recording is "
                                             "evidence of read-only commands")
                    result = record.result()
                    loaded.commands[(result.host, result.command)].append(result)
                else:
                    exchange = record.exchange()
                    loaded.http[(exchange.method, exchange.url, exchange.request_body_sha256)].append(exchange)
        if not loaded.commands and not loaded.http:
            raise RecordingError(str(folder), "no commands*.jsonl or http*.jsonl records in it")
        return loaded


def _resolved(folder: Path) -> Path:
    """`folder` with its links followed; RecordingError naming it when a link on its way leads back to itself
    (`rec -> rec`, `rec -> ../rec`: Python's RuntimeError or ELOOP, which
    would surface as pytest's INTERNALERROR)."""
    try:
        return folder.resolve()
    except RuntimeError as error:  # Python < 3.13: "Symlink loop from '...'"
        raise RecordingError(str(folder), f"a symlink loop ({error}): give the folder --record wrote") from None
    except OSError as error:  # Python >= 3.13, or a folder on the way that cannot be read
        raise RecordingError(str(folder), f"cannot be followed: {error.strerror or error}: give the folder --record "
                             "wrote") from None


def _answer(item: CommandResult | HttpExchange) -> tuple:
    """What a replay gives back for one record (timings left out: they differ run to run)."""
    if isinstance(item, CommandResult):
        return item.rc, item.stdout, item.stderr, item.timed_out
    return item.status, tuple(map(tuple, item.headers)), item.body_b64, item.error


def _merge(into: dict, other: dict, first: Path, second: Path, describe) -> None:
    for key, answers in other.items():
        if key not in into:
            into[key] = answers
        elif [_answer(a) for a in into[key]] != [_answer(a) for a in answers]:
            raise RecordingError(f"{second}", f"answers {describe(key)} otherwise than {first}: give one recording "
                                 "per run (--replay twice merges recordings of different parts, e.g. hosts and "
                                 "serving, and they must agree where they overlap)")


class Replay:
    """Answers commands and HTTP requests from one or more recording folders (merged, validated)."""

    def __init__(self, *folders: Path):
        if not folders:
            raise RecordingError("--replay", "no recording folder given")
        self.folders = [Path(f) for f in folders]
        self.folder = self.folders[0]
        self._commands: dict[tuple[str, str], list[CommandResult]] = {}
        self._http: dict[tuple[str, str, str], list[HttpExchange]] = {}
        self._used: dict[tuple, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._by_family: dict[tuple[str, Key], list[CommandResult]] | None = None
        size, origin = 0, {}
        for folder in self.folders:
            real = _resolved(folder)
            if real in origin:
                raise RecordingError(str(folder), f"given twice (also as {origin[real]})")
            origin[real] = folder
            loaded = _Folder.load(folder, MAX_RECORDING_BYTES - size)
            size += loaded.size
            _merge(self._commands, loaded.commands, self.folders[0], folder,
                   lambda key: f"[{key[0]}] {key[1][:120]!r}")
            _merge(self._http, loaded.http, self.folders[0], folder, lambda key: f"{key[0]} {key[1][:120]}")

    @property
    def where(self) -> str:
        return " + ".join(str(f) for f in self.folders)

    def _next(self, table: dict, key: tuple):
        answers = table.get(key)
        if not answers:
            return None
        with self._lock:
            index = min(self._used[key], len(answers) - 1)
            self._used[key] += 1
        return answers[index]

    def _family_index(self) -> dict[tuple[str, Key], list[CommandResult]]:
        """Recorded commands by (host, family, arguments); built on first use, once every family is declared."""
        with self._lock:
            if self._by_family is None:
                index: dict[tuple[str, Key], list[CommandResult]] = defaultdict(list)
                for (host, text), answers in self._commands.items():
                    key = command_key(text)
                    if key is not None:
                        index[(host, key)].extend(answers)
                self._by_family = index
            return self._by_family

    def command(self, host: str, command: str) -> CommandResult:
        """The recorded answer to `command` on `host`: by family and arguments for a declared command
        (`Rendered`), by its text for a `--launch` step."""
        if isinstance(command, Rendered):
            result = self._next(self._family_index(), (host, command.key))
        else:
            result = self._next(self._commands, (host, command))
        if result is None:
            known = sorted(c for h, c in self._commands if h == host)
            raise ReplayMiss(
                f"[{host}] the recording {self.where} has no answer for command: {command[:200]}\n"
                f"  it has {len(known)} commands for this host"
                + (f", e.g. {known[0][:120]!r}" if known else "")
            )
        return result

    def http(self, method: str, url: str, body: bytes) -> HttpExchange:
        exchange = self._next(self._http, (method, url, body_key(body)))
        if exchange is None:
            raise ReplayMiss(f"the recording {self.where} has no answer for {method} {url}")
        return exchange

    @property
    def hosts(self) -> set[str]:
        return {host for host, _ in self._commands}


# ---- writing -------------------------------------------------------------------------------------------

CLAIM_FILE = "recorded-by.txt"
"""Created (O_EXCL) by the run that records into a folder, before any line: a second run started at the same time
with the same new folder finds it and is refused (two runs' files in one recording are no run at all)."""

ENVIRONMENT_FAMILIES = {"process-environ": "lines", "process-env": "lines", "unit-show": "systemd",
                        "container-inspect": "docker"}
"""The commands whose answer is a whole process environment: a recording keeps only the declared variables."""


def holds_recording(folder: Path) -> list[str]:
    """The recording files already in `folder` (none when it does not exist), its claim included."""
    try:
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if RECORD_FILE_RE.match(p.name) or p.name == CLAIM_FILE)
    except OSError:  # unreadable: claim_recording says why, naming it
        return []


def claim_recording(folder: Path) -> None:
    """Make `folder` this run's recording, atomically: RecordingError when another run holds it (or held it), or
    when it is no folder (a file, a link that loops: `mkdir` says it exists, or ELOOP)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        what = "not a folder" if isinstance(error, FileExistsError) else f"{error.strerror or error}"
        raise RecordingError(f"--record {folder}", f"cannot be written: {what} (a file, or a symlink that loops or "
                             "leads nowhere): record into a new or empty folder") from None
    try:
        fd = os.open(folder / CLAIM_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        try:
            said = read_regular(folder / CLAIM_FILE, 4096).decode("utf-8", "replace")[:200].strip()
        except OSError:
            said = "?"
        raise RecordingError(f"--record {folder}", f"another run records into this folder ({CLAIM_FILE}: "
                             f"{said or 'being written'}): one recording is one run; record into a new or empty "
                             "folder") from None
    except OSError as error:
        raise RecordingError(f"--record {folder}", f"cannot be written: {error.strerror or error}") from None
    try:
        os.write(fd, f"pid {os.getpid()}\n".encode())
    except OSError as error:
        raise RecordingError(f"--record {folder}", f"cannot be written: {error.strerror or error}") from None
    finally:
        os.close(fd)


def declared_environment(kind: str, text: str, kept: frozenset[str], hidden: frozenset[str]) -> str:
    """`text` (an environment-answering command's stdout, of `ENVIRONMENT_FAMILIES` kind) holding only the `kept`
    variables, those of `hidden` (forbidden ones: the check reads only whether they are set) with the value
    REDACTED. What the checks read replays the same; nothing else of the serving process's environment is kept."""
    def keep(item: str) -> str | None:
        name, sep, _ = item.partition("=")
        if not sep or name not in kept:
            return None
        return f"{name}=***" if name in hidden else item

    if kind == "lines":
        kept_lines = (keep(line) for line in text.split("\0" if "\0" in text else "\n"))
        return "".join(line + "\n" for line in kept_lines if line is not None)
    if kind == "systemd":
        out = []
        for line in text.splitlines():
            if line.startswith("Environment="):
                try:
                    words = shlex.split(line[len("Environment="):])
                except ValueError:
                    words = []
                kept_words = (keep(word) for word in words)
                line = "Environment=" + " ".join(shlex.quote(word) for word in kept_words if word is not None)
            out.append(line)
        return "\n".join(out) + ("\n" if text.endswith("\n") else "")
    try:
        containers = read_json(text, "docker inspect")
    except ParseError:
        return ""  # not what docker answers: nothing of it is kept
    for container in containers if isinstance(containers, list) else []:
        config = container.get("Config") if isinstance(container, dict) else None
        if isinstance(config, dict) and isinstance(config.get("Env"), list):
            config["Env"] = [e for item in config["Env"] if isinstance(item, str) and (e := keep(item)) is not None]
    return json.dumps(containers, indent=4)


class RecordingFailed(Exception):
    """A line could not be written (a full disk): recording stopped, no partial line left."""


@dataclass
class Recorder:
    """Appends commands and HTTP exchanges of this process to a recording folder.

    `env_kept`/`env_hidden`: the declared variables (required and forbidden) of the inventory's hosts; None
    keeps every variable (no inventory said which). A write that fails (a full disk) removes what it wrote of
    the line, stops the recording and is kept in `failed`: the plugin ends the run with exit 4 naming the
    folder, and no check is blamed for the suite's own OSError."""

    folder: Path
    env_kept: frozenset[str] | None = None
    env_hidden: frozenset[str] = frozenset()
    failed: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)

    def _append(self, stem: str, record: dict) -> None:
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
        path = self.folder / f"{stem}-{os.getpid()}.jsonl"
        with self._lock:
            if self.failed:
                return
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            except OSError as error:
                self.failed = f"--record {self.folder}: cannot write {path.name}: {error.strerror or error}"
                return
            try:
                before = os.fstat(fd).st_size
                written = 0
                try:
                    while written < len(line):
                        written += os.write(fd, line[written:])
                except OSError as error:
                    self.failed = (f"--record {self.folder}: cannot write {path.name}: {error.strerror or error}; "
                                   "recording stopped (the lines before it are whole)")
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, before)  # no half-written line
            finally:
                os.close(fd)

    def command(self, result: CommandResult) -> None:
        """Record one command, its output redacted (a process environment read from /proc holds API keys) and,
        for an environment, only the declared variables (`declared_environment`)."""
        record = asdict(result)
        stdout = result.stdout
        key = command_key(result.command) if self.env_kept is not None else None
        if key is not None and key[0] in ENVIRONMENT_FAMILIES:
            stdout = declared_environment(ENVIRONMENT_FAMILIES[key[0]], stdout, self.env_kept, self.env_hidden)
        record["stdout"], record["stderr"] = redact(stdout), redact(result.stderr)
        self._append("commands", record)

    def http(self, exchange: HttpExchange) -> None:
        self._append("http", asdict(exchange))
