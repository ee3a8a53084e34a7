"""Crafted recording folders that must not be turned into a replay: each builds one hostile or broken folder
and says where the error must point (`file:line`, or the file alone when the file itself is refused).

SYNTHESIZED: every line here is written by this module (shaped like `llmval.io.recording`'s records); nothing is
a capture. `python -m selftest.recording.probe` runs each through the real `pytest --replay` and tabulates the
exit code, the time taken and whether the error names the place.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
HOST = "kpro6"
"""A host of inventories/kpro6.toml, so a valid line here is one the kpro6 contract could ask for."""


def command_record(**changes) -> dict:
    """A valid command record (`uname -a` on kpro6), with `changes` applied (a value of ... drops the key)."""
    record = {"host": HOST, "command": "uname -a", "rc": 0, "stdout": "Linux kpro6 6.8.12-4-pve x86_64 GNU/Linux\n",
              "stderr": "", "duration_s": 0.01, "timed_out": False}
    record.update(changes)
    return {k: v for k, v in record.items() if v is not ...}


def http_record(**changes) -> dict:
    """A valid HTTP record (GET /health of kpro6's endpoint, 200), with `changes` applied."""
    record = {"method": "GET", "url": "http://10.1.2.129:30000/health", "request_body_sha256": EMPTY_SHA256,
              "request_body": "", "status": 200, "headers": [["content-type", "text/plain; charset=utf-8"]],
              "body_b64": base64.b64encode(b"ok").decode(), "elapsed_s": 0.001, "error": None}
    record.update(changes)
    return {k: v for k, v in record.items() if v is not ...}


def _lines(*records) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def _commands(folder: Path, *records, name: str = "commands-1.jsonl") -> str:
    (folder / name).write_text(_lines(command_record(), *records), encoding="utf-8")
    return f"{name}:{1 + len(records)}"


def _http(folder: Path, *records, name: str = "http-1.jsonl") -> str:
    (folder / name).write_text(_lines(http_record(), *records), encoding="utf-8")
    return f"{name}:{1 + len(records)}"


def _raw(folder: Path, data: bytes, name: str = "commands-1.jsonl") -> str:
    (folder / name).write_bytes(json.dumps(command_record()).encode() + b"\n" + data + b"\n")
    return f"{name}:2"


def _fifo(folder: Path) -> str:
    os.mkfifo(folder / "commands-fifo.jsonl")
    return "commands-fifo.jsonl"


def _symlink(target: str) -> Callable[[Path], str]:
    def build(folder: Path) -> str:
        _commands(folder)
        (folder / "commands-2.jsonl").symlink_to(target)
        return "commands-2.jsonl"
    return build


def _symlink_out(folder: Path) -> str:
    outside = folder.parent / f"{folder.name}-outside.jsonl"
    outside.write_text(_lines(command_record()), encoding="utf-8")
    _commands(folder)
    (folder / "commands-2.jsonl").symlink_to(outside)
    return "commands-2.jsonl"


def _folder_named_like_a_file(folder: Path) -> str:
    _commands(folder)
    (folder / "http-1.jsonl").mkdir()
    return "http-1.jsonl"


def _too_large(folder: Path) -> str:
    _commands(folder)
    with open(folder / "http-big.jsonl", "wb") as big:  # sparse: no disk used, but over the size cap
        big.truncate(4 << 30)
    return "http-big.jsonl"


def _deep(folder: Path) -> str:
    return _raw(folder, b"[" * 100_000 + b"]" * 100_000)


SHAPES: dict[str, Callable[[Path], str]] = {
    # the shapes issue 23 reported
    "unknown-key": lambda f: _commands(f, command_record(colour="red")),
    "missing-field": lambda f: _commands(f, command_record(rc=...)),
    "json-array": lambda f: _commands(f, "[1, 2, 3]"),
    "invalid-utf8": lambda f: _raw(f, b'{"host": "kpro6", "command": "uname -a", "stdout": "\xff\xfe"}'),
    "folder-named-like-a-file": _folder_named_like_a_file,
    "body-not-base64": lambda f: _http(f, http_record(body_b64="not base64!")),
    "rc-a-string": lambda f: _commands(f, command_record(rc="zero")),
    "stdout-a-number": lambda f: _commands(f, command_record(stdout=123)),
    "fifo": _fifo,
    "symlink-to-dev-zero": _symlink("/dev/zero"),
    "symlink-out-of-folder": _symlink_out,
    "writing-command-rm": lambda f: _commands(f, command_record(command="rm -rf /")),
    "writing-command-pct-set": lambda f: _commands(f, command_record(command="pct set 129 -delete mp0")),
    # the next ones
    "not-json": lambda f: _commands(f, '{"host": "kpro6", "command":'),
    "json-scalar": lambda f: _commands(f, "42"),
    "json-null": lambda f: _commands(f, "null"),
    "deeply-nested": _deep,
    "utf8-bom": lambda f: _raw(f, "\ufeff".encode() + json.dumps(command_record()).encode()),
    "rc-a-bool": lambda f: _commands(f, command_record(rc=True)),
    "rc-a-float": lambda f: _commands(f, command_record(rc=0.5)),
    "duration-nan": lambda f: _commands(f, json.dumps(command_record()).replace('"duration_s": 0.01',
                                                                                  '"duration_s": NaN')),
    "duration-negative": lambda f: _commands(f, command_record(duration_s=-1)),
    "timed-out-a-string": lambda f: _commands(f, command_record(timed_out="no")),
    "host-null": lambda f: _commands(f, command_record(host=None)),
    "read-command-with-appended-write": lambda f: _commands(f, command_record(command="uname -a; reboot")),
    "read-command-with-newline-write": lambda f: _commands(f, command_record(command="uname -a\nreboot")),
    "http-headers-not-pairs": lambda f: _http(f, http_record(headers=[["content-type"]])),
    "http-headers-a-dict": lambda f: _http(f, http_record(headers={"content-type": "text/plain"})),
    "http-sha256-not-hex": lambda f: _http(f, http_record(request_body_sha256="xyz")),
    "http-status-out-of-range": lambda f: _http(f, http_record(status=99999)),
    "http-status-0-without-error": lambda f: _http(f, http_record(status=0)),
    "http-writing-method": lambda f: _http(f, http_record(method="DELETE")),
    "http-url-not-http": lambda f: _http(f, http_record(url="file:///etc/shadow")),
    "too-large": _too_large,
}
"""name -> builder(folder) returning where the error must point (`file:line` or `file`)."""
