"""Each launch self-test holds its endpoint locks in its own folder (`LLMVAL_LAUNCH_LOCK_DIR`): a fake stack a test
leaves without `stop()` (a refused launch kept alive by its traceback) holds its lock until the garbage collector
runs, and would refuse the next test's launch of the same endpoint. Two stacks of one test share the folder."""

from __future__ import annotations

import pytest

from llmval.launch import LOCK_DIR_ENV


@pytest.fixture(autouse=True)
def own_launch_locks(tmp_path, monkeypatch):
    folder = tmp_path / "launch-locks"
    folder.mkdir()
    monkeypatch.setenv(LOCK_DIR_ENV, str(folder))
    return folder
