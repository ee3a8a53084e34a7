"""History of results: the previous run is the latest of the same deployment, even within one second."""

from __future__ import annotations

import datetime as dt

import pytest

from llmval.core.errors import LlmvalError
from llmval.report.results import TestResult, load_results, previous_results, write_results

STARTED = dt.datetime(2026, 11, 30, 3, 0, 0, tzinfo=dt.UTC)


def _write(reports, deployment: str, outcome: str, started=STARTED):
    return write_results(reports, inventory_path="i.toml", deployment=deployment, started=started, duration_s=1.0,
                         mode="attach", markexpr="smoke", exitstatus=0,
                         results=[TestResult(nodeid="t::a", outcome=outcome)], inventory_snapshot={"x": 1})


def test_previous_is_the_latest_run_of_the_same_deployment(tmp_path):
    assert previous_results(tmp_path, "local") is None
    _write(tmp_path, "local", "passed")
    _write(tmp_path, "local", "failed")  # same second: kept beside the first, not over it
    _write(tmp_path, "kpro6-lab", "error", STARTED + dt.timedelta(seconds=5))
    _, document = previous_results(tmp_path, "local")
    assert document["tests"][0]["outcome"] == "failed" and document["inventory_snapshot"] == {"x": 1}
    assert len(list((tmp_path / "history").glob("*-local*.json"))) == 2
    assert previous_results(tmp_path, "kpro6-lab")[1]["tests"][0]["outcome"] == "error"


def test_unreadable_results_are_an_llmval_error(tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text("{not json")
    with pytest.raises(LlmvalError, match="cannot read results JSON"):
        load_results(bad)
    with pytest.raises(LlmvalError, match="run the contract first"):
        load_results(tmp_path / "missing.json")


@pytest.mark.parametrize("text", ["{not json", '["a list"]', '{"deployment": "d", "tests": [], "schema_version": "x"}'])
def test_a_file_that_is_no_results_document_names_the_file_and_the_fix(tmp_path, text):
    """Malformed, of another shape, or of no known schema version: each says which file, what was expected and
    what to do (name a run's results.json or run the contract), as every could-not-read of the suite does."""
    bad = tmp_path / "results.json"
    bad.write_text(text)
    with pytest.raises(LlmvalError) as raised:
        load_results(bad)
    assert str(bad) in str(raised.value) and "expected the results.json a contract run writes" in str(raised.value)
    assert "run the contract again" in str(raised.value)
