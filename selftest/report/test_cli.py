"""`python -m llmval.report` re-renders the status document from a reports folder."""

from __future__ import annotations

import json
import shutil

from llmval.report.__main__ import main
from selftest.strategies import ROOT

RESULTS = ROOT / "selftest" / "data" / "results"


def test_rerenders_against_the_earlier_run_in_history(tmp_path, capsys):
    (tmp_path / "history").mkdir()
    earlier = tmp_path / "history" / "results-20261129T020000Z-kpro6.json"
    shutil.copy(RESULTS / "synth-kpro6-nightly-previous.json", earlier)
    current = json.loads((RESULTS / "synth-kpro6-nightly.json").read_text())
    current.update(inventory=str(ROOT / "inventories" / "kpro6.toml"), mode="attach")  # a live nightly run's
    (tmp_path / "results.json").write_text(json.dumps(current))
    assert main([str(tmp_path)]) == 1  # the synthesized run is red
    status = (tmp_path / "status.md").read_text()
    assert "_against history/results-20261129T020000Z-kpro6.json_" in status
    assert "decode_tok_s_c1 (tok/s): 281.0 → 277.4 (-1.3%)" in status
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert capsys.readouterr().out.startswith("RED: ")


def test_a_replays_results_rerender_into_its_own_folder_never_the_deployments_status(tmp_path, capsys):
    # results.json is the latest run's whatever its kind; re-rendering it after the README's replay wrote the
    # replay's GREEN as reports/status.md, the deployment's status (issue 46.2 through another door)
    (tmp_path / "status.md").write_text("the live deployment's status\n")
    current = json.loads((RESULTS / "synth-kpro6-nightly.json").read_text())
    current.update(inventory=str(ROOT / "inventories" / "kpro6.toml"), mode="replay")
    (tmp_path / "results.json").write_text(json.dumps(current))
    (tmp_path / "replay" / "history").mkdir(parents=True)
    shutil.copy(RESULTS / "synth-kpro6-nightly-previous.json",
                tmp_path / "replay" / "history" / "results-20261129T020000Z-kpro6.json")
    assert main([str(tmp_path)]) == 1
    assert (tmp_path / "status.md").read_text() == "the live deployment's status\n"
    assert not (tmp_path / "report.html").exists()
    status = (tmp_path / "replay" / "status.md").read_text()
    assert "_against history/results-20261129T020000Z-kpro6.json_" in status
    assert capsys.readouterr().out.startswith(f"RED: {tmp_path / 'replay' / 'status.md'}")
    assert main([str(tmp_path / "replay")]) == 2  # the replay's record holds no results.json of its own here
    shutil.copy(tmp_path / "results.json", tmp_path / "replay" / "results.json")
    assert main([str(tmp_path / "replay")]) == 1  # named directly, it is the record itself
    assert not (tmp_path / "replay" / "replay").exists()


def test_missing_results_is_exit_2_with_the_cause(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert "run the contract first" in capsys.readouterr().err


def test_report_package_exports_are_curated_and_sorted():
    import types

    import llmval.report as report

    public = sorted(n for n, v in vars(report).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
                    and n != "annotations")
    assert report.__all__ == public
