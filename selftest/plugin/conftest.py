"""The fresh ops repo (selftest/plugin/opsrepo.py), built once per session for the modules that use it."""

from __future__ import annotations

import pytest

from selftest.plugin.opsrepo import OpsRepo, build_ops_repo


@pytest.fixture(scope="session")
def ops(tmp_path_factory: pytest.TempPathFactory) -> OpsRepo:
    return build_ops_repo(tmp_path_factory.mktemp("package"))
