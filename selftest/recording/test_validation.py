"""A recording is validated like an inventory (issue 23.4): every crafted folder of `shapes.SHAPES` is one
RecordingError naming the file (and line), never a traceback, a hang or a replayed writing command; pytest
turns it into a usage error (exit 4). Every committed recording still loads, and one run's parts merge."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from llmval.core.errors import RecordingError
from llmval.io.recording import MAX_FILE_BYTES, Replay
from selftest.contract import run_contract
from selftest.recording.shapes import SHAPES, command_record, http_record
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]

DATA = ROOT / "selftest" / "data"
KPRO6_HOSTS = DATA / "replays" / "hosts" / "SYNTHESIZED-kpro6-healthy"
KPRO6_SERVING = DATA / "replays" / "SYNTHESIZED-kpro6-sglang-healthy"


def _load_within(folder: Path, seconds: float = 20) -> BaseException | None:
    """What loading `folder` raised (None: it loaded), failing the test if it takes longer than `seconds`."""
    outcome: list[BaseException | None] = []

    def load() -> None:
        try:
            Replay(folder)
            outcome.append(None)
        except BaseException as error:  # the test reports whatever it was
            outcome.append(error)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"loading {folder} did not finish within {seconds} s (a hang)"
    return outcome[0]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_crafted_recording_is_one_error_naming_file_and_line(tmp_path, shape):
    folder = tmp_path / "rec"
    folder.mkdir()
    where = SHAPES[shape](folder)
    error = _load_within(folder)
    assert isinstance(error, RecordingError), repr(error)
    message = str(error)
    assert message.startswith(f"invalid recording {folder / where}: "), message  # `file:line: ` or `file: `
    assert len(message) > len(f"invalid recording {folder / where}: ") + 10, message  # and a reason


@pytest.mark.parametrize("shape", ["unknown-key", "fifo", "writing-command-pct-set"])
def test_pytest_refuses_a_crafted_recording_with_exit_4_and_no_traceback(pytester, tmp_path, shape):
    folder = tmp_path / "rec"
    folder.mkdir()
    where = SHAPES[shape](folder)
    result = run_contract(pytester, "-m", "smoke", "-p", "no:xdist", "--inventory",
                          str(ROOT / "inventories" / "kpro6.toml"), "--replay", str(folder))
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output[-2000:]
    assert f"invalid recording {folder / where}" in output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert not list((pytester.path / "reports").rglob("status.md"))  # nothing judged, nothing written


def test_every_committed_recording_validates():
    # a recording is a folder of commands*/http* records (what Replay reads); other JSON lines under DATA are
    # measurements (selftest/data/fleet: one line per timed run), not recordings
    folders = sorted({p.parent for pattern in ("commands*.jsonl", "http*.jsonl") for p in DATA.rglob(pattern)})
    assert len(folders) >= 30
    for folder in folders:
        Replay(folder)


def test_the_size_cap_leaves_room_for_every_committed_file():
    assert max(p.stat().st_size for p in DATA.rglob("*.jsonl")) * 100 < MAX_FILE_BYTES


def test_a_hosts_and_a_serving_recording_replay_together_as_one_run(pytester):
    """Issue 20.4: the second --replay was silently ignored (26 could-not-check on kpro6 smoke)."""
    result = run_contract(pytester, "-m", "smoke", "-p", "no:xdist", "--inventory",
                          str(ROOT / "inventories" / "kpro6.toml"), "--replay", str(KPRO6_HOSTS),
                          "--replay", str(KPRO6_SERVING))
    document = json.loads((pytester.path / "reports" / "results.json").read_text())
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert document["counts"].get("error", 0) == 0 and document["counts"]["passed"] >= 40
    markers = {m for t in document["tests"] if t["outcome"] == "passed" for m in t["markers"]}
    assert {"hosts", "serving"} <= markers
    assert f"mode: replay {KPRO6_HOSTS} + {KPRO6_SERVING}" in result.stdout.str()


def _write(folder: Path, name: str, *records: dict) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_merged_recordings_must_agree_where_they_overlap(tmp_path):
    one = _write(tmp_path / "one", "commands-1.jsonl", command_record())
    same = _write(tmp_path / "same", "commands-1.jsonl", command_record(duration_s=3.0))  # timing only differs
    other = _write(tmp_path / "other", "commands-1.jsonl", command_record(stdout="Linux other\n"))
    assert Replay(one, same).command("kpro6", "uname -a").stdout.startswith("Linux kpro6")
    with pytest.raises(RecordingError, match=r"invalid recording .*other: answers \[kpro6\] 'uname -a' otherwise"):
        Replay(one, other)
    with pytest.raises(RecordingError, match="given twice"):
        Replay(one, one)
    served = _write(tmp_path / "served", "http-1.jsonl", http_record())
    changed = _write(tmp_path / "changed", "http-1.jsonl", http_record(status=503))
    with pytest.raises(RecordingError, match=r"answers GET http://10\.1\.2\.129:30000/health otherwise"):
        Replay(one, served, changed)


def test_record_refuses_a_folder_that_already_holds_a_recording(pytester, tmp_path):
    folder = _write(tmp_path / "rec", "commands-1.jsonl", command_record())
    result = run_contract(pytester, "-m", "smoke", "-p", "no:xdist", "--inventory",
                          str(ROOT / "inventories" / "kpro6.toml"), "--record", str(folder), "--collect-only")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output[-2000:]
    assert f"--record {folder} already holds a recording (commands-1.jsonl): one recording is one run" in output
