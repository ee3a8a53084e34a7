"""The real local engine (vLLM on CPU + SmolLM2) for self-tests marked `engine`: where its venv is, an inventory
for it on another port, and its stack launched for the length of a `with`. The fixtures that hold it
(`engine_lock`, `shared_engine`, `live_engine`) are in selftest/conftest.py."""

import contextlib
import os
import tomllib
from pathlib import Path

import pytest
import tomli_w

from llmval.load import ENGINE_LOCK as ENGINE_LOCK  # the lock the plugin and the benches hold by default

ROOT = Path(__file__).resolve().parent.parent
ENGINE_PYTHON = ROOT / ".venv-engine" / "bin" / "python"
SELFTEST_ENGINE_PORT = 8341


def engine_inventory(folder: Path, port: int, **endpoint_changes) -> Path:
    """inventories/local.toml moved to `port` (launch command included), with endpoint changes applied."""
    document = tomllib.loads((ROOT / "inventories" / "local.toml").read_text())
    endpoint = document["endpoints"][0]
    endpoint["base_url"] = f"http://127.0.0.1:{port}"
    # the engine's log, where live_engine's launch writes it (no --reports of a test run knows it)
    endpoint["logs"] = f"file:{folder / 'launch' / 'start-vllm-cpu.log'}"
    endpoint.update(endpoint_changes)
    for step in document["launch"]["start"]:
        step["run"] = step["run"].replace("--port 8321", f"--port {port}")
        for key in ("VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "XDG_CACHE_HOME"):
            if key in step.get("env", {}):
                step["env"][key] = str(ROOT / step["env"][key])
        step["run"] = step["run"].replace(".venv-engine/", f"{ROOT}/.venv-engine/").replace(
            "--model .cache/", f"--model {ROOT}/.cache/")
    for host in document["hosts"]:
        for model_file in host.get("model_files", []):
            model_file["path"] = str(ROOT / model_file["path"])
    path = folder / f"local-{port}.toml"
    path.write_text(tomli_w.dumps(document))
    return path


def require_engine_venv(what: str = "the local engine") -> Path:
    """The engine's venv python; without it the test fails in CI (where set-up installs it) and skips elsewhere."""
    if not ENGINE_PYTHON.exists():
        message = f"{what} is not set up ({ENGINE_PYTHON} missing): run scripts/setup_local_engine.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return ENGINE_PYTHON


@contextlib.contextmanager
def launched(path: Path, folder: Path):
    """The stack of the inventory at `path` launched (its logs under `folder/launch`), stopped on exit: the
    `llmval.launch.Stack`."""
    from llmval.inventory import load_inventory
    from llmval.io.transport import connect
    from llmval.launch import Stack

    inventory = load_inventory(path)
    stack = Stack(inventory, lambda name: connect(inventory.host(name)), folder / "launch", say=lambda _: None)
    try:
        stack.launch()
        yield stack
    finally:
        stack.stop()
