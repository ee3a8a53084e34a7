"""The status document from SYNTHESIZED results (selftest/data/results/) and the seed inventory of kpro6."""

from __future__ import annotations

import copy
import json
import re

import pytest

from llmval.inventory import load_inventory
from llmval.report import build_status, evidence_paths, render_html, render_markdown
from selftest.strategies import ROOT

RESULTS = ROOT / "selftest" / "data" / "results"


@pytest.fixture(scope="module")
def kpro6():
    return load_inventory(ROOT / "inventories" / "kpro6.toml")


@pytest.fixture
def runs(kpro6):
    """(previous, current) synthesized nightly runs; between them a gate is raised and the model renamed."""
    previous = json.loads((RESULTS / "synth-kpro6-nightly-previous.json").read_text())
    current = json.loads((RESULTS / "synth-kpro6-nightly.json").read_text())
    snapshot = kpro6.model_dump(mode="json", by_alias=True, exclude_none=True)
    previous["inventory_snapshot"] = copy.deepcopy(snapshot) | {
        "perf": [{"endpoint": "kpro6-sglang", "decode_tok_s_c1_min": 250.0}]}
    current["inventory_snapshot"] = copy.deepcopy(snapshot) | {
        "perf": [{"endpoint": "kpro6-sglang", "decode_tok_s_c1_min": 270.0}]}
    current["inventory_snapshot"]["endpoints"][0]["model"] = "Qwen3.5-122B-A10B-FP8-v2"
    return previous, current


@pytest.fixture
def status(kpro6, runs) -> str:
    previous, current = runs
    return render_markdown(build_status(current, kpro6, previous=previous, previous_name="history/prev.json"))


def test_sections_follow_the_seed_status_document(status):
    headings = [line for line in status.splitlines() if line.startswith("#")]
    assert headings == [
        "# Deployment status: kpro6 (production)", "## What broke", "## Goal", "## Constraints & Preferences",
        "## Progress",
        "### Done", "### Failing", "### Blocked", "### Not checked (skipped)", "## Key decisions", "## Next steps",
        "## Critical context", "## Relevant files", "## Changed since last run"]


def test_done_carries_the_observed_values(status):
    assert "✅ `serving.kv_cache.dtype.server_info` — kpro6-sglang: bfloat16" in status
    assert "✅ `serving.speculative.num_steps` — kpro6-sglang: 4" in status
    assert "| kpro6-sglang | decode_tok_s_c1 | 277.4 | tok/s |" in status
    assert "| kpro6-ct129 | compute_cap | 12.0 |  |" in status


def test_failing_names_check_cause_and_fix(status):
    assert ("❌ `accuracy.niah.all_pass_up_to` on kpro6-sglang: expected every cell <= 131072 passes, observed 2 "
            "cells fail") in status
    assert "fix: check --context-length and the rope scaling" in status
    assert "⚠️ `test_model_files_identical` on kpro6-ct129 — could not check (CommandTimeout): [kpro6-ct129] " \
           "command ran past its timeout of 600 s" in status


def test_blockers_show_holding_with_the_observation(status):
    assert "⛔ **kpro6-p2p** (kpro6)" in status
    assert "still holds: `hosts.nccl.p2p` on kpro6-ct129 observed no P2P channel" in status
    assert "workaround: NCCL_P2P_DISABLE=1" in status


def test_decisions_show_their_guarding_checks_verdicts(status):
    block = status.split("## Key decisions")[1].split("## Next steps")[0]
    steps = block.split("**spec-steps-4**")[1].split("- ")[0:5]
    assert "✅ **spec-steps-4**" in block
    assert any("`serving.speculative.num_steps` on kpro6-sglang: pass — observed 4" in s for s in steps)
    assert "`serving.tool_call_parser*`: not checked this run" in block


def test_decision_whose_guard_fails_is_flagged_with_a_next_step(kpro6, runs):
    _, current = runs
    broken = copy.deepcopy(current)
    for test in broken["tests"]:
        for record in test["verdicts"]:
            if record["check"] == "serving.speculative.num_steps":
                record.update(observed="5", cause="broken")
    status = render_markdown(build_status(broken, kpro6))
    assert "❌ **spec-steps-4** (kpro6)" in status
    assert "`serving.speculative.num_steps` on kpro6-sglang: FAIL — observed 5" in status
    assert "Decision **spec-steps-4** is no longer in force" in status


def test_changed_since_last_run_lists_inventory_verdict_and_value_changes(status):
    changes = status.split("## Changed since last run")[1]
    assert "endpoints[kpro6-sglang].model: Qwen3.5-122B-A10B-FP8 → Qwen3.5-122B-A10B-FP8-v2 (served model renamed)" \
        in changes
    assert "perf[kpro6-sglang].decode_tok_s_c1_min: 250.0 → 270.0 (gate raised)" in changes
    assert "❌ verdict: tests/accuracy/test_niah.py::test_niah_gate_all_pass_up_to[kpro6-sglang]: passed → failed " \
           "(broke)" in changes
    assert "[kpro6-sglang] decode_tok_s_c1 (tok/s): 281.0 → 277.4 (-1.3%)" in changes


def test_without_a_previous_run_the_diff_says_so(kpro6, runs):
    status = render_markdown(build_status(runs[1], kpro6))
    assert "no previous run of this deployment in reports/history/" in status


def test_relevant_files_are_the_paths_the_checks_read_and_the_declared_ones(status):
    # the sha256 fact's typed path argument (Verdict.paths), though the check could not be made
    assert "`/models/Qwen3.5-122B-A10B-FP8/model-00001-of-00039.safetensors` — checked by " \
           "test_model_files_identical" in status
    assert "`/etc/pve/lxc/129.conf` — *declared*" in status
    # a path the env check's evidence only quotes is not a file it read (it reads the process environment)
    assert "/etc/systemd/system/sglang.service" not in status.split("## Relevant files")[1]


@pytest.mark.parametrize("text", [
    "Environment=NCCL_P2P_DISABLE=1 in /etc/systemd/system/sglang.service.", "fuser -v /dev/nvidia* held by 1234",
    "./models/x.safetensors and ~/.cache/huggingface/hub"], ids=["unit-file", "glob", "relative-and-home"])
def test_evidence_paths_come_from_the_typed_paths_never_the_text(text):
    verdict = {"target": "h", "check": "c", "observed": text, "cause": "held"}
    results = {"schema_version": 3, "tests": [{"nodeid": "t", "outcome": "passed", "verdicts": [verdict]}]}
    assert evidence_paths(results) == {}
    verdict["paths"] = [{"host": "h", "path": "/models/x"}, {"host": "h2", "path": "/tmp/nccl.*.log"}]
    assert {host: dict(paths) for host, paths in evidence_paths(results).items()} == {
        "h": {"/models/x": {"c"}}, "h2": {"/tmp/nccl.*.log": {"c"}}}


def test_html_puts_status_first_embeds_plots_and_escapes(kpro6, runs, tmp_path):
    previous, current = runs
    current["tests"][0]["message"] = "<script>alert(1)</script>"
    png = tmp_path / "niah-grid.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    (tmp_path / "perf-vs-baseline.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\1" * 16)
    doc = build_status(current, kpro6, previous=previous, plots=["perf-vs-baseline.png", "niah-grid.png"])
    page = render_html(doc, current, tmp_path)
    assert page.index("Deployment status: kpro6") < page.index("Every test")
    assert page.count('src="data:image/png;base64,') == 2
    assert page.index("niah-grid.png") < page.index("perf-vs-baseline.png")  # heatmap first
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert '<span class="verdict" style="background:#cf222e">RED</span>' in page


def test_a_status_md_below_the_reports_folder_links_the_plots_where_they_are(kpro6, runs):
    """A replay's or partial run's status.md is one folder below reports/, where the run writes its plots."""
    doc = build_status(runs[1], kpro6, plots=["niah-grid.png"])
    assert "![niah-grid.png](niah-grid.png)" in render_markdown(doc)
    assert "![niah-grid.png](../niah-grid.png)" in render_markdown(doc, "../")


def test_values_with_markup_characters_render_literally(kpro6, tmp_path):
    record = {"subject": "kpro6-ct129", "check": "hosts.env.token", "expected": "***",
              "observed": "*** | <b>x</b> `y`", "ok": False}
    results = {"exitstatus": 1,
               "tests": [{"nodeid": "t::x[kpro6-ct129]", "outcome": "failed", "message": "", "evidence": [record]}]}
    doc = build_status(results, kpro6)
    markdown = render_markdown(doc)
    assert r"expected \*\*\*, observed \*\*\* \| \<b>x\</b> \`y\`" in markdown
    page = render_html(doc, results, tmp_path)
    assert "expected ***, observed *** | &lt;b&gt;x&lt;/b&gt; `y`" in page


def test_report_html_leads_with_what_broke_and_lists_failing_tests_first(kpro6, runs, tmp_path):
    """A RED run: the "What broke" box (root causes, dependents folded) comes before the first held check, and
    the "Every test" table starts with the failing tests (issue 20.8: they used to start after ~40 green rows)."""
    _, current = runs
    doc = build_status(current, kpro6)
    page = render_html(doc, current, tmp_path)
    top = page.index('<div class="broke red"><h2>What broke</h2>')
    assert top < page.index("<h2>Goal</h2>") < page.index(">holds</span>")
    box = page[top:page.index("<h2>Goal</h2>")]
    assert "accuracy.niah.all_pass_up_to" in box and "fix: check --context-length" in box
    table = page[page.index("Every test"):]
    outcomes = [table[m.end():table.index("<", m.end())] for m in re.finditer(r'<span class="badge"[^>]*>', table)]
    failing = [o for o in outcomes if o in {"failed", "error", "xpassed"}]
    assert failing and outcomes[:len(failing)] == failing, outcomes


def test_report_html_of_a_green_run_says_nothing_broke_at_the_top(kpro6, tmp_path):
    results = {"exitstatus": 0, "counts": {"passed": 1}, "tests": [{"nodeid": "t::x[kpro6-ct129]", "outcome": "passed",
               "verdicts": [{"target": "kpro6-ct129", "check": "hosts.gpu.count", "expected": "4", "observed": "4",
                             "cause": "held"}]}]}
    page = render_html(build_status(results, kpro6), results, tmp_path)
    assert page.index('<div class="broke green"><h2>Nothing broke</h2>') < page.index("<h2>Goal</h2>")
    assert "every check that ran holds (1 tests)" in page
