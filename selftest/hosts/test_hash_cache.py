"""Model-file identity is not re-hashed when nothing changed: the sha256 cache in reports/ is keyed on
host + path + size + mtime, and only new or changed files are hashed again (real find/sha256sum here)."""

from __future__ import annotations

import hashlib
import json
import os

from llmval.hostfacts import HashCache, HostFacts, model_digests
from llmval.inventory import HostSpec, ModelFileSpec
from llmval.io.recording import Recorder
from llmval.io.transport import connect


def _sha_commands(folder) -> list[str]:
    return [json.loads(line)["command"] for path in folder.glob("commands-*.jsonl")
            for line in path.read_text().splitlines() if json.loads(line)["command"].startswith("sha256sum")]


def test_unchanged_files_come_from_the_cache_and_changed_ones_are_rehashed(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    for i in range(3):
        (model / f"shard-{i}.safetensors").write_bytes(bytes([i]) * 10_000)
    spec = ModelFileSpec(path=str(model), group="g")
    host = HostSpec(name="me", platform="p")
    cache = HashCache(tmp_path / "reports" / "hash-cache.json")

    def digests(run: str):
        facts = HostFacts(connect(host, recorder=Recorder(tmp_path / run)))  # a fresh run: nothing memoized
        return {d.relpath: d.sha256 for d in model_digests(facts, spec, cache, with_hashes=True)}

    first = digests("run1")
    assert first == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in model.iterdir()}
    assert len(_sha_commands(tmp_path / "run1")) == 1
    assert digests("run2") == first and _sha_commands(tmp_path / "run2") == []  # nightly, nothing changed
    changed = model / "shard-1.safetensors"
    changed.write_bytes(b"\xff" * 10_000)  # same size, new bytes and mtime
    os.utime(changed, (1_900_000_000, 1_900_000_000))
    third = digests("run3")
    assert third["shard-1.safetensors"] == hashlib.sha256(b"\xff" * 10_000).hexdigest() != first["shard-1.safetensors"]
    (command,) = _sha_commands(tmp_path / "run3")
    assert command.endswith(f"-- {changed}")  # only the changed file was hashed again


def test_no_cache_in_replays_means_every_run_hashes():
    assert HashCache(None).get() == {}
    HashCache(None).put({"k": "v"})  # a no-op: replays are judged on their own answers
