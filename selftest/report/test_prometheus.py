"""The Prometheus textfile (`--prometheus-textfile`, llmval.report.prometheus): a GREEN and a RED run each write a
file prometheus_client parses, with a series per check and target (the failing one 0, could-not-check told apart),
the run's exit status and start time; a partial run keeps the series of the checks it did not run; a run replaces
only its own deployment's and scope's; the file is replaced atomically and never written through a link; nothing
secret in a label; the two Alertmanager rules of docs/ops.md name only metrics and labels the file has."""

from __future__ import annotations

import re
import sys

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from llmval.core.errors import LlmvalError
from llmval.report.prometheus import HELP, TextfileNotWritable, start_seconds, write_textfile
from llmval.report.results import load_results
from selftest.report.runs import INVENTORIES, run_with
from selftest.report.trend_runs import DEPLOYMENT, ENDPOINT, FLAKY_CHECK, HOST, STARTS, night
from selftest.strategies import ROOT

pytest_plugins = ["pytester"]


def samples(path) -> dict[tuple[str, frozenset], float]:
    """Every sample of the textfile at `path`, by (metric, labels), as prometheus_client parses it (bytes decoded:
    read_text would turn a `\\r` inside a label value into a line break)."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(path.read_bytes().decode()) for s in family.samples}


def value(found: dict, metric: str, **labels: str) -> float | None:
    """The one sample of `metric` whose labels include `labels` (None: no such sample)."""
    hits = [v for (name, got), v in found.items() if name == metric and set(labels.items()) <= got]
    assert len(hits) <= 1, f"{metric} {labels}: {len(hits)} samples"
    return hits[0] if hits else None


def test_a_green_and_a_red_run_each_write_a_series_per_check_and_target(tmp_path):
    green, red = tmp_path / "green.prom", tmp_path / "red.prom"
    write_textfile(green, night(0))
    write_textfile(red, night(1))
    ok, broken = samples(green), samples(red)
    assert value(ok, "llmval_run_exit_status", deployment=DEPLOYMENT, scope="nightly") == 0
    assert value(broken, "llmval_run_exit_status", deployment=DEPLOYMENT, scope="nightly") == 1
    assert value(ok, "llmval_run_start_timestamp_seconds") == STARTS[0].timestamp()
    assert value(ok, "llmval_check_ok", check=FLAKY_CHECK, target=ENDPOINT) == 1
    assert value(broken, "llmval_check_ok", check=FLAKY_CHECK, target=ENDPOINT) == 0
    assert value(broken, "llmval_check_ok", check="hosts.gpu.count", target=HOST) == 1
    # could not check is a 0 too, told apart by its cause
    assert value(broken, "llmval_check_ok", check="hosts.model_files.sha256", target=HOST) == 0
    assert value(broken, "llmval_check_cause", check="hosts.model_files.sha256", cause="could-not-check") == 1
    assert value(broken, "llmval_check_cause", check="hosts.model_files.sha256", cause="broken") == 0
    assert value(broken, "llmval_check_cause", check=FLAKY_CHECK, cause="broken") == 1
    assert value(broken, "llmval_run_tests", outcome="failed") == 2 and value(broken, "llmval_run_tests",
                                                                              outcome="error") == 1
    assert value(broken, "llmval_measurement", name="decode_tok_s_c1", target=ENDPOINT, unit="tok/s") == 36.2
    assert value(broken, "llmval_measurement_gate", name="decode_tok_s_c1", op="min") == 40
    text = green.read_text()
    for metric, help_text in HELP.items():
        if metric != "llmval_run_selection":  # only a partial run has one
            assert f"# HELP {metric} {help_text}\n" in text


def test_a_partial_run_never_removes_the_series_of_checks_it_did_not_run(tmp_path):
    textfile = tmp_path / "llmval.prom"
    write_textfile(textfile, night(0, scope="smoke"))
    write_textfile(textfile, night(1, scope="partial", extra_target="other-endpoint").model_copy(
        update={"selection": "-k tool_call"}))
    partial = night(2, scope="partial", extra_target="third-endpoint")
    partial = partial.model_copy(update={"tests": [t for t in partial.tests if "tool_call" in t.nodeid],
                                         "selection": "-k validity"})
    written = write_textfile(textfile, partial)
    found = samples(textfile)
    # the smoke run's series are all still there, as it wrote them
    assert value(found, "llmval_check_ok", scope="smoke", check="hosts.gpu.count") == 1
    assert value(found, "llmval_run_exit_status", scope="smoke") == 0
    # the first partial run's checks that the second did not run are kept; its run series are the second's
    assert value(found, "llmval_check_ok", scope="partial", check=FLAKY_CHECK, target="other-endpoint") == 0
    assert value(found, "llmval_check_ok", scope="partial", check="perf.decode.tok_s_c1", target=ENDPOINT) == 0
    assert value(found, "llmval_check_ok", scope="partial", check=FLAKY_CHECK, target="third-endpoint") == 1
    assert value(found, "llmval_run_selection", scope="partial", selection="-k validity") == 1
    assert value(found, "llmval_run_selection", scope="partial", selection="-k tool_call") is None
    assert written.kept > 0 and written.series == len(found)


def test_a_declared_scope_replaces_only_its_own_deployment_and_scope(tmp_path):
    textfile = tmp_path / "llmval.prom"
    write_textfile(textfile, night(1, scope="smoke"))
    write_textfile(textfile, night(1).model_copy(update={"deployment": "other-deployment"}))
    smaller = night(0, scope="smoke")
    write_textfile(textfile, smaller.model_copy(update={"tests": smaller.tests[:1]}))
    found = samples(textfile)
    assert value(found, "llmval_check_ok", deployment=DEPLOYMENT, scope="smoke", check="hosts.gpu.count") == 1
    # the smoke run replaced its deployment's smoke series: a check it no longer has is gone
    assert value(found, "llmval_check_ok", deployment=DEPLOYMENT, scope="smoke", check=FLAKY_CHECK) is None
    assert value(found, "llmval_run_exit_status", deployment=DEPLOYMENT, scope="smoke") == 0
    assert value(found, "llmval_check_ok", deployment="other-deployment", check=FLAKY_CHECK) == 0


def test_a_replay_never_replaces_the_live_series_an_alert_reads(tmp_path):
    # the README's offline GREEN replay in an ops repo whose ini names a textfile: before, its series were the
    # deployment's scope="smoke" ones, so a replayed GREEN replaced the RED live smoke run an alert was firing on
    textfile = tmp_path / "llmval.prom"
    write_textfile(textfile, night(1, scope="smoke"))
    write_textfile(textfile, night(0, scope="smoke").model_copy(update={"mode": "replay"}))
    write_textfile(textfile, night(0, scope="partial").model_copy(update={"mode": "replay", "selection": "-k x"}))
    found = samples(textfile)
    assert value(found, "llmval_run_exit_status", deployment=DEPLOYMENT, scope="smoke") == 1
    assert value(found, "llmval_check_ok", scope="smoke", check=FLAKY_CHECK, target=ENDPOINT) == 0
    assert value(found, "llmval_run_exit_status", deployment=DEPLOYMENT, scope="replay") == 0
    assert value(found, "llmval_check_ok", scope="replay", check=FLAKY_CHECK, target=ENDPOINT) == 1


def test_the_textfile_is_replaced_atomically_never_written_through_a_link(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("not yours\n")
    textfile = tmp_path / "llmval.prom"
    textfile.symlink_to(target)
    write_textfile(textfile, night(0))
    assert target.read_text() == "not yours\n" and not textfile.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left
    assert value(samples(textfile), "llmval_run_exit_status") == 0


def test_an_unreadable_textfile_is_replaced_and_said(tmp_path):
    textfile = tmp_path / "llmval.prom"
    textfile.write_text("this is { not an exposition\n")
    written = write_textfile(textfile, night(0))
    assert written.replaced_unreadable and written.kept == 0
    assert value(samples(textfile), "llmval_run_exit_status") == 0


@pytest.mark.parametrize(("name", "says"), [("llmval.txt", "reads only *.prom"),
                                            ("missing/llmval.prom", "does not exist")])
def test_a_textfile_the_collector_would_never_read_is_refused(tmp_path, name, says):
    with pytest.raises(TextfileNotWritable, match=re.escape(says)):
        write_textfile(tmp_path / name, night(0))


def test_nothing_secret_reaches_a_label(tmp_path):
    secret = "hf_" + "a1b2c3d4e5" * 4
    run = night(0, scope="partial").model_copy(update={"selection": f"-k {secret}"})
    write_textfile(tmp_path / "llmval.prom", run)
    text = (tmp_path / "llmval.prom").read_text()
    assert secret not in text and "hf_***" in text


def test_a_results_file_of_a_newer_schema_is_refused_naming_it(tmp_path):
    newer = tmp_path / "results.json"
    newer.write_text('{"schema_version": 99, "deployment": "x", "tests": []}')
    with pytest.raises(LlmvalError, match=r"results.json: results schema_version 99 was written by a newer llmval"):
        load_results(newer)


def test_start_seconds_reads_what_results_json_writes():
    assert start_seconds("2026-12-01T02:17:00+00:00") == STARTS[0].timestamp()
    assert start_seconds("") == 0.0


RULE_METRIC_RE = re.compile(r"\b(?P<metric>llmval_[a-z_]+)(?:\{(?P<matchers>[^}]*)\})?")
MATCHER_RE = re.compile(r'(?P<label>\w+)\s*(?P<op>=~|!~|!=|=)\s*"(?P<value>[^"]*)"')
GROUPING_RE = re.compile(r"\b(?:ignoring|on)\((?P<labels>[^)]*)\)")


def alert_rules() -> list[dict]:
    """The Alertmanager rules of docs/ops.md's Alerting section (its one YAML block)."""
    page = (ROOT / "docs" / "ops.md").read_text()
    section = page.split("\n## Alerting\n", 1)[1]
    block = re.search(r"```yaml\n(?P<yaml>.*?)```", section, re.S)["yaml"]
    return [rule for group in yaml.safe_load(block)["groups"] for rule in group["rules"]]


def test_the_documented_alert_rules_name_only_metrics_and_labels_the_textfile_has(tmp_path):
    textfile = tmp_path / "llmval.prom"
    write_textfile(textfile, night(1, scope="smoke"))
    write_textfile(textfile, night(1))  # a figure below its gate, in the nightly scope
    found = samples(textfile)
    rules = alert_rules()
    assert [r["alert"] for r in rules] == ["LlmvalSmokeFailing", "LlmvalFigureOutsideGate"]
    for rule in rules:
        expr = rule["expr"]
        grouping = {label.strip() for m in GROUPING_RE.finditer(expr) for label in m["labels"].split(",")}
        named = list(RULE_METRIC_RE.finditer(expr))
        assert named, expr
        for use in named:
            metric = use["metric"]
            labels = [set(dict(got)) for name, got in found if name == metric]
            assert labels, f"{rule['alert']}: {metric} is not in the textfile"
            for matcher in MATCHER_RE.finditer(use["matchers"] or ""):
                assert any(matcher["label"] in got for got in labels), f"{metric} has no label {matcher['label']}"
                if matcher["op"] == "=":
                    assert any((matcher["label"], matcher["value"]) in got for name, got in found if name == metric), \
                        f"{rule['alert']}: no {metric}{{{matcher['label']}=\"{matcher['value']}\"}} in the textfile"
        used = {u["metric"] for u in named}
        assert grouping <= {label for name, got in found if name in used for label, _ in got}, \
            f"{rule['alert']}: {grouping} (ignoring/on) are no labels of {used}"
        for templated in re.findall(r"\$labels\.(\w+)", " ".join(rule.get("annotations", {}).values())):
            assert any(templated in dict(got) for name, got in found if name in {u["metric"] for u in named}), \
                f"{rule['alert']}: its annotation uses $labels.{templated}, which its series lack"


GREEN_PLANTED = '''
def test_gpu_count(expect):
    expect("gpu-node-01", "selftest.gpu.count", expected=4, observed=4)


def test_decode(expect):
    expect.measure("gpu-node-01", "decode_tok_s_c1", 42.5, "tok/s")
    expect("gpu-node-01", "perf.decode.tok_s_c1", expected=">= 40 tok/s", observed="42.50 tok/s", ok=True)
'''
RED_PLANTED = GREEN_PLANTED.replace("observed=4)", "observed=3)")


@pytest.mark.parametrize(("planted", "exit_status"), [(GREEN_PLANTED, 0), (RED_PLANTED, 1)], ids=["GREEN", "RED"])
def test_a_contract_run_writes_its_textfile(pytester, planted, exit_status):
    textfile = pytester.path / "collector" / "llmval.prom"
    textfile.parent.mkdir()
    result = run_with(pytester, planted, INVENTORIES / "report-blockers.toml", f"--prometheus-textfile={textfile}")
    assert result.ret == exit_status
    result.stdout.fnmatch_lines([f"llmval prometheus textfile: {textfile} (* series)"])
    found = samples(textfile)
    assert value(found, "llmval_run_exit_status", scope="partial") == exit_status
    assert value(found, "llmval_check_ok", check="selftest.gpu.count", target="gpu-node-01") == 1 - exit_status
    assert value(found, "llmval_check_ok", check="hosts.reachable", target="localhost") == 1
    assert value(found, "llmval_measurement", name="decode_tok_s_c1", unit="tok/s") == 42.5
    started = load_results(pytester.path / "reports" / "results.json")["started"]
    assert value(found, "llmval_run_start_timestamp_seconds") == start_seconds(started)


def test_a_textfile_in_no_folder_is_refused_before_any_check(pytester):
    result = run_with(pytester, GREEN_PLANTED, INVENTORIES / "report-blockers.toml",
                      f"--prometheus-textfile={pytester.path / 'nowhere' / 'llmval.prom'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prometheus-textfile*nowhere*does not exist*"])
    assert not (pytester.path / "reports" / "results.json").exists()


def test_the_ini_setting_is_read_relative_to_the_ini_file(pytester):
    (pytester.path / "collector").mkdir()
    pytester.makeini("[pytest]\nllmval_prometheus_textfile = collector/llmval.prom\n")
    pytester.makepyfile(test_planted=GREEN_PLANTED)
    (pytester.path / "sub").mkdir()
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-c",
                          str(pytester.path / "tox.ini"), "--rootdir", str(ROOT),
                          f"--inventory={INVENTORIES / 'report-blockers.toml'}",
                          f"--reports={pytester.path / 'reports'}", str(ROOT / "tests" / "hosts" / "test_reachable.py"),
                          timeout=300)
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert value(samples(pytester.path / "collector" / "llmval.prom"), "llmval_run_exit_status") == 0


def test_a_label_value_that_reads_like_a_pair_keeps_its_series(tmp_path):
    """A run of a declared scope leaves its own old lines unparsed (`others_lines`): a partial run's selection that
    spells this deployment's and scope's pairs inside its value is still another run's series, kept."""
    textfile = tmp_path / "llmval.prom"
    tricky = f'-k \'x,deployment="{DEPLOYMENT}",\rscope="smoke"\' {{deployment="{DEPLOYMENT}"'
    partial = night(1, scope="partial").model_copy(update={"selection": tricky})
    write_textfile(textfile, partial.model_copy(update={"deployment": 'odd"\\name\n'}))
    write_textfile(textfile, partial)
    write_textfile(textfile, night(0, scope="smoke"))
    found = samples(textfile)
    shown = tricky.replace("\r", "\\r")  # a control character is written as its escape, as in every report
    assert value(found, "llmval_run_selection", deployment=DEPLOYMENT, scope="partial", selection=shown) == 1
    assert value(found, "llmval_run_exit_status", deployment='odd"\\name\n', scope="partial") == 1
    assert value(found, "llmval_run_exit_status", deployment=DEPLOYMENT, scope="smoke") == 0
    write_textfile(textfile, night(1, scope="smoke"))  # and its own are replaced, not doubled
    assert value(samples(textfile), "llmval_run_exit_status", deployment=DEPLOYMENT, scope="smoke") == 1


def test_a_textfile_that_cannot_be_written_leaves_the_previous_one_and_says_why(tmp_path, monkeypatch):
    textfile = tmp_path / "llmval.prom"
    write_textfile(textfile, night(0))
    before = textfile.read_bytes()
    monkeypatch.setattr("os.replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(TextfileNotWritable, match=r"llmval.prom: the folder .* \(No space left on device\); the "
                                                  r"previous llmval.prom is left as it was: pass a path"):
        write_textfile(textfile, night(1))
    assert textfile.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["llmval.prom"]
