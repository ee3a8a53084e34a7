"""Text the encoders refuse (issue 32.4): a lone surrogate in a server's JSON (`"0.11.0\\ud800x"` in /version) after a
GREEN run raised UnicodeEncodeError in pytest_sessionfinish: no report was written and the previous GREEN
status.md and results.json stayed in place. Reports now write such a character as its escape, and a report this
run could not make never leaves the previous one standing."""

from __future__ import annotations

import json

import pytest

from selftest.hostile.harness import run_contract
from selftest.hostile.server import HostileServer, answer

pytestmark = pytest.mark.subprocess  # runs the contract in a child


def test_a_lone_surrogate_from_the_server_is_reported_escaped_and_no_stale_green_stays(tmp_path):
    with HostileServer() as server:
        first = run_contract(server, tmp_path)
    assert first.rc == 0 and "GREEN" in first.files["reports/partial/status.md"], first.terminal[-3000:]
    with HostileServer({"/version": answer('{"version": "0.32.0\\ud800x"}')}) as server:
        second = run_contract(server, tmp_path)
    assert "Traceback" not in second.terminal and "INTERNALERROR" not in second.terminal, second.terminal[-3000:]
    assert "UnicodeEncodeError" not in second.terminal, second.terminal[-3000:]
    results = json.loads(second.files["reports/results.json"])
    assert results["started"] != json.loads(first.files["reports/results.json"])["started"]  # this run's, not the old
    for name in ("reports/partial/status.md", "reports/partial/report.html", "reports/junit.xml"):
        assert name in second.files, sorted(second.files)
    said = json.dumps(results) + second.files["reports/partial/status.md"] + second.files["reports/partial/report.html"]
    assert "0.32.0\\\\ud800x" in said or "0.32.0\\ud800x" in said, "the surrogate is shown escaped"
