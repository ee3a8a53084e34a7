"""Packaging beyond pyproject.toml: the wheel ships the pytest wiring (fixtures/) and the contract (tests/) in
place, as `llmval.pytest_plugin` and `llmval.contract_tests`, and the example inventories with their JSON Schema
(inventories/) as `llmval.inventories`, so `pip install pytest-llmval` gives the whole suite while the checkout keeps
its layout (pure logic in src/llmval, wiring in fixtures/, the contract in tests/).

`build_py` starts from an empty build/lib: setuptools reuses the folder, so a module deleted or moved since the
last build of this checkout (report/secrets.py -> core/secrets.py) shipped in the next wheel and in `pip install
<checkout>` beside its new place (issue 34.1: six such stale modules were found in a wheel built here).

`url` and `license` are set here because pip before 25.1 shows only the `Home-page` and `License` fields (not
`Project-URL` and `License-Expression`): `pip show pytest-llmval` names both either way."""

import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
CONTRACT = ["llmval.contract_tests"] + [f"llmval.contract_tests.{p.name}" for p in sorted((HERE / "tests").iterdir())
                                  if p.is_dir() and any(p.glob("test_*.py"))]



class FreshBuildPy(build_py):
    """build_py into an emptied build_lib (module docstring)."""

    def run(self) -> None:
        if not self.editable_mode:
            shutil.rmtree(self.build_lib, ignore_errors=True)
        super().run()


setup(
    cmdclass={"build_py": FreshBuildPy},
    packages=[*find_packages("src"), "llmval.templates", "llmval.inventories", "llmval.pytest_plugin", *CONTRACT],
    package_dir={"": "src", "llmval.pytest_plugin": "fixtures", "llmval.contract_tests": "tests",
                 "llmval.inventories": "inventories"},
    package_data={"llmval.contract_tests": ["*/README.md"], "llmval.templates": ["*"],
                  "llmval.inventories": ["*.toml", "*.json"]},
    url="https://pypi.org/project/pytest-llmval/",
    license="MIT",
)
