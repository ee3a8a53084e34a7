"""`llmval trend` (llmval.report.trend): over three runs (GREEN, RED, GREEN) it names the check that flipped and
back as flaky and draws it, each figure against its gate, and the verdicts; what a server said stays text; a file it
cannot read (a newer schema, no results JSON) or runs of two deployments are refused naming the file (exit 4); headless
Chromium renders the page with its plots."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from llmval.__main__ import main
from llmval.core.verdict import Cause
from llmval.report.trend import flips, is_flaky
from selftest.report.trend_runs import DEPLOYMENT, ENDPOINT, FLAKY_CHECK, night, write_nights
from selftest.strategies import ROOT

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def trend_page(tmp_path_factory):
    """The trend page of the three synthesized nights, and what `llmval trend` printed."""
    reports = tmp_path_factory.mktemp("reports")
    files = write_nights(reports)
    out = reports / "trend"
    with pytest.MonkeyPatch.context() as patch:
        printed = []
        patch.setattr("builtins.print", lambda *a, **k: printed.append(" ".join(map(str, a))))
        assert main(["trend", *map(str, files), "--out", str(out)]) == 0
    return out, "\n".join(printed)


def test_trend_over_three_runs_names_the_flipped_check_and_draws_it(trend_page):
    out, printed = trend_page
    assert f"FLAKY {FLAKY_CHECK} [{ENDPOINT}]: 2 flip(s)" in printed
    assert "hosts.gpu.count" not in printed  # held every night: no flip
    page = (out / "index.html").read_text()
    assert f'<span class="flaky">FLAKY</span> {FLAKY_CHECK}</td><td>{ENDPOINT}</td><td>2</td><td>✓ ✗ ✓</td>' in page
    assert "latest 42.4 tok/s; gate: at least 40 (perf.decode.tok_s_c1)" in page
    assert "latest 640.2 ms; gate: at most 900 (perf.latency.ttft_p99_ms)" in page
    drawn = sorted(p.name for p in out.glob("*.png"))
    assert drawn == ["trend-checks.png", "trend-figure-01.png", "trend-figure-02.png", "trend-figure-03.png",
                     "trend-verdicts.png"]
    for name in drawn:
        assert f'<img src="{name}"' in page and (out / name).read_bytes().startswith(PNG_MAGIC)
    assert "1 (contract broken)" in page and page.count("<td>GREEN</td>") == 2


@pytest.mark.parametrize(("states", "changes", "flaky"), [
    ([Cause.HELD, Cause.BROKEN, Cause.HELD], 2, True),
    ([Cause.BROKEN, Cause.HELD, Cause.BROKEN], 2, True),
    ([Cause.HELD, Cause.HELD, Cause.BROKEN], 1, False),
    ([Cause.HELD, None, Cause.HELD], 0, False),  # a run that did not judge it is no flip
    ([Cause.BROKEN, Cause.COULD_NOT_CHECK, Cause.BLOCKED], 0, False),  # never held: never flipped
])
def test_a_check_is_flaky_when_it_went_one_way_and_back(states, changes, flaky):
    assert (flips(states), is_flaky(states)) == (changes, flaky)


def test_what_a_server_said_is_text_on_the_page(tmp_path):
    hostile = '<script>alert(1)</script>"'
    for n in range(2):
        run = night(n, extra_target=hostile)
        (tmp_path / f"r{n}.json").write_text(json.dumps(run.model_dump(mode="json")))
    assert main(["trend", str(tmp_path / "r0.json"), str(tmp_path / "r1.json"), "--out", str(tmp_path / "t")]) == 0
    page = (tmp_path / "t" / "index.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;&quot;" in page


def test_a_replayed_run_is_marked_as_one(tmp_path):
    # `llmval trend --history=reports/replay/history` after the README's replay: before, its runs read as the
    # deployment's own smoke runs (scope smoke, GREEN), nothing saying a recording was judged
    for n in range(2):
        run = night(n, scope="smoke").model_copy(update={"mode": "replay" if n else "attach"})
        (tmp_path / f"r{n}.json").write_text(json.dumps(run.model_dump(mode="json")))
    assert main(["trend", str(tmp_path / "r0.json"), str(tmp_path / "r1.json"), "--out", str(tmp_path / "t")]) == 0
    page = (tmp_path / "t" / "index.html").read_text()
    assert "<strong>1 of these runs replayed a recording</strong>" in page
    assert page.count("<td>smoke (replay)</td>") == 1 and page.count("<td>smoke</td>") == 1


def test_a_results_file_it_cannot_read_is_refused_naming_it(tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(night(0).model_dump(mode="json")))
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(night(1).model_dump(mode="json") | {"schema_version": 99}))
    assert main(["trend", str(good), str(newer), "--out", str(tmp_path / "t")]) == 4
    err = capsys.readouterr().err
    assert f"{newer}" in err and "schema_version 99 was written by a newer llmval" in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps(night(1).model_dump(mode="json") | {"deployment": "elsewhere"}))
    assert main(["trend", str(good), str(other), "--out", str(tmp_path / "t")]) == 4
    assert f"2 deployments (elsewhere, {DEPLOYMENT})" in capsys.readouterr().err
    assert main(["trend", str(tmp_path / "missing.json"), "--out", str(tmp_path / "t")]) == 4
    assert "no results JSON at" in capsys.readouterr().err
    assert main(["trend", "--out", str(tmp_path / "t")]) == 4
    assert "no results files given" in capsys.readouterr().err
    # after the README's replay the deployment's history is empty (the replay's runs are in replay/history/):
    # before, this said "no results files given ... or pass --history", which had been passed
    (tmp_path / "history").mkdir()
    assert main(["trend", "--history", str(tmp_path / "history"), "--out", str(tmp_path / "t")]) == 4
    assert f"--history {tmp_path / 'history'} holds no results-*.json yet" in (err := capsys.readouterr().err)
    assert "a replay's runs are in reports/replay/history/" in err
    assert not (tmp_path / "t" / "index.html").exists()


PLOT_COLOURS = {"verdict and held green": (0x2C, 0xA0, 0x2C), "figure line blue": (0x1F, 0x77, 0xB4)}
"""Colours only the plots have (the page's own text is black, its FLAKY mark red): in a screenshot, the plots shown."""


def screenshot(page, png, chromium: str) -> dict[str, int]:
    """Pixels of each PLOT_COLOURS colour in headless Chromium's screenshot of `page`."""
    from PIL import Image

    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1200,2400", f"--screenshot={png}", page.as_uri()], capture_output=True,
                   timeout=120, check=True)
    with Image.open(png) as image:
        counts = {rgb: 0 for rgb in PLOT_COLOURS.values()}
        for count, rgb in image.convert("RGB").getcolors(maxcolors=2**24):
            if rgb in counts:
                counts[rgb] += count
    return {name: counts[rgb] for name, rgb in PLOT_COLOURS.items()}


@pytest.mark.subprocess
@pytest.mark.slow
def test_headless_chromium_shows_the_plots(trend_page, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        pytest.skip("no headless Chromium here (apt-get install -y chromium): the page's rendering is not checked")
    out, _ = trend_page
    shown = screenshot(out / "index.html", tmp_path / "shown.png", chromium)
    # measured: about 18,000 green pixels (squares, heat strip) and 600 blue (the thin lines and their markers)
    assert shown["verdict and held green"] > 2000 and shown["figure line blue"] > 200, shown
    # the same page without its plot files: none of those colours, so the count above is the plots
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(out / "index.html", bare / "index.html")
    assert screenshot(bare / "index.html", tmp_path / "bare.png", chromium) == dict.fromkeys(PLOT_COLOURS, 0)


def test_runs_written_by_an_older_suite_are_read(tmp_path, capsys):
    """Two schema-2 results files (selftest/data/results, SYNTHESIZED), upgraded as the reports upgrade them."""
    data = ROOT / "selftest" / "data" / "results"
    assert main(["trend", str(data / "synth-kpro6-nightly-previous.json"), str(data / "synth-kpro6-nightly.json"),
                 "--out", str(tmp_path / "t")]) == 0
    assert "changed accuracy.niah.all_pass_up_to [kpro6-sglang]: 1 flip(s)" in capsys.readouterr().out
    page = (tmp_path / "t" / "index.html").read_text()
    # measured beside another figure (output_tok_s_c16) in one test: no gate is guessed for either
    assert "<h3>decode_tok_s_c1 [kpro6-sglang]</h3><p>latest 277.4 tok/s; no gate stated beside it</p>" in page
