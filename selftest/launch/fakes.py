"""Stand-in hosts for launch self-tests: a recording, scripted fake `Connection` and a fake clock.

No ssh, no pct, no docker: `FakeHosts.connection_to(name)` returns a connection that records every
`(host, command)` it is sent, exactly as `Stack` sends it through a real `Connection`, and answers from
a script. Answers are SYNTHESIZED from the documented formats (systemctl show KEY=VALUE, journalctl
--show-cursor, docker inspect -f, ray status, nvidia-smi csv), not recorded on real hosts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from llmval.core.errors import CommandTimeout
from llmval.io.command import is_declared
from llmval.io.recording import CommandResult

TIMEOUT_RC = -9
"""An answer with this exit code raises CommandTimeout, as a real Connection does for a hung command."""


@dataclass
class Rule:
    """Answer commands on `host` matching `pattern` (regex search) with `answers`, one per call; the last repeats."""

    host: str
    pattern: str
    answers: list[tuple[int, str]]
    calls: int = 0

    def answer(self) -> tuple[int, str]:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return answer


@dataclass
class FakeClock:
    """monotonic() and sleep() for a Stack: sleeping advances time instantly."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class FakeHosts:
    """Every host of an inventory, scripted; `sent` is the exact command sequence in order."""

    rules: list[Rule] = field(default_factory=list)
    sent: list[tuple[str, str]] = field(default_factory=list)

    def on(self, host: str, pattern: str, *answers: tuple[int, str]) -> FakeHosts:
        self.rules.insert(0, Rule(host, pattern, list(answers)))  # later rules win
        return self

    def connection_to(self, name: str) -> FakeConnection:
        return FakeConnection(name, self)

    def commands(self, host: str | None = None) -> list[str]:
        return [c for h, c in self.sent if host is None or h == host]


class FakeConnection:
    def __init__(self, name: str, hosts: FakeHosts):
        self.name = name
        self.hosts = hosts

    def run(self, command: str, *, timeout_s: float | None = None) -> CommandResult:
        """As `Connection.run`: only a declared, rendered Command (the readiness watch's reads)."""
        if not is_declared(command):
            raise TypeError(f"Connection.run sends only a declared Command, not {command!r}")
        return self.run_step(command, timeout_s=timeout_s)

    def run_step(self, command: str, *, timeout_s: float | None = None) -> CommandResult:
        command = str(command)
        self.hosts.sent.append((self.name, command))
        for rule in self.hosts.rules:
            if rule.host == self.name and re.search(rule.pattern, command):
                rc, out = rule.answer()
                if rc == TIMEOUT_RC:
                    raise CommandTimeout(self.name, command, f"no answer within {timeout_s} s (killed)")
                return CommandResult(self.name, command, rc, out, "", 0.01)
        return CommandResult(self.name, command, 0, "", "", 0.01)


class ProbeAfter:
    """An endpoint probe that answers ready from its `n`-th call on (never when n is None)."""

    def __init__(self, n: int | None):
        self.n = n
        self.calls = 0

    def __call__(self, url: str) -> bool:
        self.calls += 1
        return self.n is not None and self.calls >= self.n


def never_open(host: str, port: int) -> bool:
    return False
