"""What an engine log says reaches the terminal escaped (issue 32.7): `--wait-ready`'s progress line quoted the
log's last line raw, so an OSC sequence retitled the operator's terminal window, a CSI one cleared the screen and
U+202E reversed the rest of the line. Now it is shown as every other server text is (`visible`, after `redact`)."""

from __future__ import annotations

from llmval.launch import ReadyTarget, wait_all_ready
from llmval.launch._watch import Observation, Watch

HOSTILE_LINE = "INFO loading \x1b]0;owned\x07\x1b[2J\x1b[H\u202eevil\u2066 --api-key Zq7xW2mK9pL4vR8tN3bH6j"


class _Log(Watch):
    source = "file:/var/log/engine.log@h"

    def observe(self) -> Observation:
        return Observation(progress="1", tail=f"INFO start\n{HOSTILE_LINE}\n")


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_ready_progress_shows_the_engine_logs_escapes_written_out_and_its_key_redacted():
    said: list[str] = []
    clock = _Clock()
    target = ReadyTarget("ep", "endpoint", deadline_s=12, probe=lambda: "GET /health: \x1b[31mHTTP 503\x1b[0m",
                         watch=_Log())
    ended = wait_all_ready([target], say=said.append, clock=clock, sleep=clock.sleep, interval_s=1,
                           progress_every_s=5)
    text = "\n".join(said) + "\n" + ended["ep"].verdict()
    progress = [line for line in said if "waiting for" in line]
    assert progress and all("; log: INFO loading \\x1b]0;owned\\x07\\x1b[2J\\x1b[H\\u202eevil\\u2066" in line
                            for line in progress), progress
    assert not any(c in text for c in "\x1b\x07\u202e\u2066"), text
    assert "Zq7xW2mK9pL4vR8tN3bH6j" not in text
