"""Packaging beyond pyproject.toml: the wheel ships the pytest wiring (fixtures/) and the contract (tests/) in
place, as `llmval.pytest_plugin` and `llmval.contract`, so `pip install llmval` gives the whole suite while the
checkout keeps its layout (pure logic in src/llmval, wiring in fixtures/, the contract in tests/)."""

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
CONTRACT = ["llmval.contract_tests"] + [f"llmval.contract_tests.{p.name}" for p in sorted((HERE / "tests").iterdir())
                                  if p.is_dir() and any(p.glob("test_*.py"))]

setup(
    packages=[*find_packages("src"), "llmval.pytest_plugin", *CONTRACT],
    package_dir={"": "src", "llmval.pytest_plugin": "fixtures", "llmval.contract_tests": "tests"},
    package_data={"llmval.contract_tests": ["*/README.md"], "llmval": ["templates/*", "templates/*/*"]},
)
