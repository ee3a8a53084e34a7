"""A partial run is not the deployment's status (issue 20.6): `-k`, `--lf`, a node id, a narrower `-m` say
"partial: ..." in their verdict line and write their status under reports/partial/, never over status.md or
into its history; `-m smoke` is a declared scope and keeps writing status.md, which names the last run of the
other scope. A replay (every run here is one) writes all of that under reports/replay/, never the deployment's
status or history (issue 46.2), and a live run is compared with the last live one."""

from __future__ import annotations

import datetime as dt
import json
import sys

import pytest

from llmval.inventory import load_inventory
from llmval.report import build_status, render_markdown
from llmval.report.results import previous_results, results_document, write_document
from llmval.report.scope import RunScope, Selection, scope_of, scope_of_document
from selftest.report.runs import INVENTORIES, run_with
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]

KPRO6 = ROOT / "inventories" / "kpro6.toml"
REPLAYS = ROOT / "selftest" / "data" / "replays"
KPRO6_RUN = ("--inventory", str(KPRO6), "--replay", str(REPLAYS / "hosts" / "SYNTHESIZED-kpro6-healthy"),
             "--replay", str(REPLAYS / "SYNTHESIZED-kpro6-sglang-healthy"), "-p", "no:xdist")


@pytest.mark.parametrize(("selection", "expected"), [
    (Selection(), RunScope("nightly")),
    (Selection(markexpr="nightly"), RunScope("nightly")),
    (Selection(markexpr="smoke"), RunScope("smoke")),
    (Selection(keyword="kv_cache"), RunScope("partial", "-k kv_cache")),
    (Selection(markexpr="smoke", keyword="kv_cache"), RunScope("partial", "-k kv_cache")),
    (Selection(markexpr="smoke and serving"), RunScope("partial", "-m 'smoke and serving'")),
    (Selection(markexpr="hosts"), RunScope("partial", "-m hosts")),
    (Selection(last_failed=True), RunScope("partial", "--lf")),
    (Selection(stepwise=True), RunScope("partial", "--sw")),
    (Selection(deselect=("hosts/test_gpus.py::test_x",)), RunScope("partial", "--deselect hosts/test_gpus.py::test_x")),
    (Selection(ignore=("tests/perf",)), RunScope("partial", "--ignore tests/perf")),
    (Selection(paths=("tests/hosts/test_gpus.py::test_gpu_count_matches_inventory[kpro6-ct129]",)),
     RunScope("partial", "tests/hosts/test_gpus.py::test_gpu_count_matches_inventory[kpro6-ct129]")),
], ids=["all", "nightly", "smoke", "k", "smoke-k", "smoke-and-serving", "hosts", "lf", "sw", "deselect", "ignore",
        "node-id"])
def test_only_the_declared_scopes_are_not_partial(selection, expected):
    assert scope_of(selection) == expected


def test_documents_written_before_scopes_are_judged_by_their_markexpr():
    assert scope_of_document({"markexpr": "smoke"}) == RunScope("smoke")
    assert scope_of_document({"markexpr": ""}) == RunScope("nightly")
    assert scope_of_document({"markexpr": "smoke and serving"}).is_partial
    assert scope_of_document({"markexpr": "", "scope": "partial", "selection": "--lf"}) == RunScope("partial", "--lf")


def _document(started: dt.datetime, scope: RunScope, exitstatus: int = 0) -> dict:
    markexpr = "smoke" if scope.name == "smoke" else ""
    return results_document(inventory_path="kpro6.toml", deployment="kpro6", started=started, duration_s=1.0,
                            mode="attach", markexpr=markexpr, exitstatus=exitstatus, results=[],
                            scope=scope.name, selection=scope.selection)


def test_the_previous_run_is_the_last_one_of_the_same_scope(tmp_path):
    t0 = dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC)
    write_document(tmp_path, _document(t0, RunScope("nightly"), exitstatus=1), t0)
    for hour in (1, 2, 3):
        started = t0 + dt.timedelta(hours=hour)
        write_document(tmp_path, _document(started, RunScope("smoke")), started)
    nightly = previous_results(tmp_path, "kpro6", RunScope("nightly"))
    smoke = previous_results(tmp_path, "kpro6", RunScope("smoke"))
    assert nightly is not None and nightly[1]["started"] == "2026-12-01T02:00:00+00:00"
    assert smoke is not None and smoke[1]["started"] == "2026-12-01T05:00:00+00:00"
    assert previous_results(tmp_path, "kpro6", RunScope("partial", "-k x")) is None


def test_a_partial_verdict_line_says_partial_and_points_at_the_status():
    inventory = load_inventory(KPRO6)
    started = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    partial = render_markdown(build_status(_document(started, RunScope("partial", "-k kv_cache")), inventory))
    assert ("Verdict: **GREEN** (partial: -k kv_cache; no tests ran) — a part of the contract, not the "
            "deployment's status (that is `../status.md`).") in partial
    smoke = render_markdown(build_status(_document(started, RunScope("smoke")), inventory,
                                         notes=["Last full (nightly) run: RED at 2026-12-01T02:00:00+00:00."]))
    assert "Verdict: **GREEN** (no tests ran)." in smoke and "partial" not in smoke
    assert "Last full (nightly) run: RED at 2026-12-01T02:00:00+00:00." in smoke
    # a replay's status.md is titled as the deployment's: its verdict line says what it judged (a recording)
    for scope, tally in ((RunScope("smoke"), "no tests ran"),
                         (RunScope("partial", "-k x"), "partial: -k x; no tests ran")):
        replayed = render_markdown(build_status(_document(started, scope) | {"mode": "replay"}, inventory))
        assert (f"Verdict: **GREEN** ({tally}) — a replay: it judged a recording, not the deployment as it is now, "
                "so it is not the deployment's status (that is reports/status.md, which live runs write).") in replayed


def _run(pytester, *args: str) -> pytest.RunResult:
    """The contract from the repo root with only `args` selecting (run_contract always adds all of tests/)."""
    pytester.chdir()
    return pytester.run(sys.executable, "-m", "pytest", "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
                        "--reports", str(pytester.path / "reports"), *args, *KPRO6_RUN, timeout=300)


def _status(pytester) -> tuple[str, list[str], dict]:
    """The replays' status and history (reports/replay/), and reports/results.json (always the last run's)."""
    reports = pytester.path / "reports"
    return ((reports / "replay" / "status.md").read_text(),
            sorted(p.name for p in (reports / "replay" / "history").iterdir()),
            json.loads((reports / "results.json").read_text()))


def test_a_partial_run_keeps_the_smoke_status_and_history_and_writes_its_own(pytester):
    smoke = _run(pytester, str(ROOT / "tests"), "-m", "smoke")
    assert smoke.ret == 0, smoke.stdout.str()[-3000:]
    status, history, document = _status(pytester)
    assert "Verdict: **GREEN**" in status and document["scope"] == "smoke"
    timed = {m["name"]: m["value"] for t in document["tests"] for m in t["measured"] if "tok_s" in m["name"]}
    assert timed and all(str(v).startswith("not measured: a replay") for v in timed.values()), timed  # 46.3

    kv_cache = ROOT / "tests" / "serving" / "test_kv_cache.py"
    for selection in ((str(ROOT / "tests"), "-m", "smoke", "-k", "kv_cache"), (str(kv_cache),),
                      (str(ROOT / "tests"), "-m", "smoke", "--deselect", f"{ROOT / 'tests' / 'hosts'}")):
        partial = _run(pytester, *selection)
        output = partial.stdout.str()
        assert partial.ret == 0, output[-3000:]
        assert "llmval status (GREEN, replay, partial: " in output
        assert _status(pytester)[:2] == (status, history)  # the deployment's status and history untouched
        assert _status(pytester)[2]["scope"] == "partial"  # results.json is this run's, marked partial
        own = (pytester.path / "reports" / "replay" / "partial" / "status.md").read_text()
        assert "Verdict: **GREEN** (partial: " in own and "not the deployment's status" in own

    assert len(list((pytester.path / "reports" / "replay" / "partial" / "history").iterdir())) == 3
    again = _run(pytester, str(ROOT / "tests"), "-m", "smoke")
    status_again, history_again, _ = _status(pytester)
    assert again.ret == 0 and len(history_again) == 2
    assert f"_against history/{history[0]}_" in status_again  # compared with the last smoke run, not a partial

    assert not (pytester.path / "reports" / "status.md").exists()  # the deployment's: no replay ever wrote it
    assert list((pytester.path / "reports" / "history").iterdir()) == []


def test_a_live_run_is_compared_with_live_runs_only(tmp_path):
    """A history from before replays went apart may hold a replayed GREEN: a live run's previous run skips it."""
    t0 = dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC)
    live = _document(t0, RunScope("smoke"))
    write_document(tmp_path, live, t0)
    later = t0 + dt.timedelta(hours=1)
    write_document(tmp_path, {**_document(later, RunScope("smoke")), "mode": "replay"}, later)  # a replay, after it
    assert previous_results(tmp_path, "kpro6", RunScope("smoke"))[1]["mode"] == "replay"
    found = previous_results(tmp_path, "kpro6", RunScope("smoke"), replayed=False)
    assert found is not None and found[1]["started"] == live["started"] and found[1]["mode"] == "attach"
    assert previous_results(tmp_path, "kpro6", RunScope("smoke"), replayed=True)[1]["started"] != live["started"]


HOLDS = '''
def test_the_selftest_value_holds(expect):
    expect("localhost", "selftest.value", expected=1, observed=1)
'''


def test_a_live_runs_changes_are_against_the_last_live_run_not_a_replay_between(pytester):
    """Issue 46.2, end to end: a replay's results left in the history (as runs before replays went apart wrote
    them) are passed over; the next live run's "Changed since last run" is against the live run before it."""
    first = run_with(pytester, HOLDS, INVENTORIES / "report-blockers.toml")
    assert first.ret == 0, first.stdout.str()[-3000:]
    history = pytester.path / "reports" / "partial" / "history"  # a file of tests: a partial run
    [live] = sorted(history.iterdir())
    replayed = {**json.loads(live.read_text()), "mode": "replay"}
    stamp = dt.datetime.strptime(live.name.split("-")[1], "%Y%m%dT%H%M%SZ") + dt.timedelta(seconds=1)
    planted = history / f"results-{stamp:%Y%m%dT%H%M%SZ}-report-selftest.json"
    planted.write_text(json.dumps(replayed))
    second = run_with(pytester, HOLDS, INVENTORIES / "report-blockers.toml")
    assert second.ret == 0, second.stdout.str()[-3000:]
    status = (pytester.path / "reports" / "partial" / "status.md").read_text()
    assert f"_against history/{live.name}_" in status and planted.name not in status, status[-3000:]
