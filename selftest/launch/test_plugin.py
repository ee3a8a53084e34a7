"""The --launch plugin's rules: destructive tests need --launch and --allow-destructive; no --launch with xdist;
--launch needs a [launch] section."""

from __future__ import annotations

import sys

import pytest

from selftest.launch.helpers import ROOT

pytest_plugins = ["pytester"]
PLUGINS = ["-p", "no:llmval", "-p", "llmval.pytest_plugin.options", "-p", "llmval.pytest_plugin.hosts",
           "-p", "llmval.pytest_plugin.launch"]
INVENTORY = str(ROOT / "selftest" / "data" / "inventories" / "launch-stub-server.toml")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_kills="""
        import pytest

        @pytest.mark.destructive
        def test_kills_gpu_processes():
            pass
    """)
    pytester.makeini("[pytest]\nmarkers =\n    destructive: changes a host\n")
    # `=`: a bare path inside the checkout would make it pytest's rootdir (a usage error since issue 34.4)
    return pytester.run(sys.executable, "-m", "pytest", *PLUGINS, "-p", "no:cacheprovider", f"--inventory={INVENTORY}",
                        f"--reports={pytester.path / 'reports'}", "-rs", "test_kills.py", *args, timeout=120)


@pytest.fixture(autouse=True)
def _importable_from_the_repo(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@pytest.mark.parametrize("args", [("--launch",), ("--allow-destructive",)], ids=["launch-only", "destructive-only"])
def test_destructive_tests_are_skipped_without_both_flags(pytester, args):
    result = _run(pytester, *args)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*destructive: runs only with --launch and --allow-destructive*"])


def test_destructive_tests_run_with_launch_and_allow_destructive(pytester):
    _run(pytester, "--launch", "--allow-destructive").assert_outcomes(passed=1)


def test_launch_with_xdist_is_a_usage_error_with_the_fix(pytester):
    result = _run(pytester, "--launch", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "run with -n0" in result.stderr.str()


def test_launch_without_a_launch_section_is_a_usage_error(pytester):
    inventory = pytester.path / "no-launch.toml"
    inventory.write_text("[deployment]\nname = 'x'\n")
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
                          str(ROOT / "pyproject.toml"), "--reports", str(pytester.path / "reports"),
                          str(ROOT / "tests" / "serving" / "test_model.py"), "--inventory", str(inventory), "--launch",
                          timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output[-2000:]
    assert "has no [launch] section" in output
