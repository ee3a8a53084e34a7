"""The fact registry: `@fact(...)` declares a host fact once; `HostFacts` reads declared facts of one host.

See the package docstring (`llmval.hostfacts`) for how to declare a fact.
"""

from __future__ import annotations

import concurrent.futures
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..core.errors import CommandFailed, LlmvalError
from ..inventory import HostSpec
from ..io.command import COMMANDS, allow, family_of, is_read_only
from ..io.recording import CommandResult
from ..io.transport import Connection
from ._command import Command

__all__ = ["COMMANDS", "FACTS", "Fact", "HostFacts", "Reader", "allow", "fact", "fact_plan", "failure_text",
           "family_of", "is_read_only", "peer_facts", "prefetch"]

Plan = Callable[[HostSpec], "bool | Iterable[tuple]"]


@dataclass(frozen=True)
class Fact:
    """One host fact: the commands it may send, how it is read and parsed, and when the contract needs it."""

    name: str
    """Also its reader's name: `facts.<name>(*args)`."""
    commands: tuple[Command, ...]
    """Every command this fact may send (its allowed argv shapes); nothing else can be sent for it."""
    read: Callable[..., Any]
    """`read(reader, *args) -> value`: sends its commands through `reader` and parses the output."""
    section: str
    """The inventory section (of `[[hosts]]`) that asks for it, e.g. `gpus`, `proxmox.guests`, `env`."""
    needs: Plan
    """`needs(host_spec)`: False/True, or the argument tuples to read for that host (prefetch plan)."""
    doc: str = ""

    def plan(self, spec: HostSpec) -> list[tuple]:
        wanted = self.needs(spec)
        if wanted is True:
            return [()]
        if not wanted:
            return []
        return [tuple(a) for a in wanted]  # type: ignore[union-attr]


FACTS: dict[str, Fact] = {}
"""Every declared fact by name, in declaration order (filled when `llmval.hostfacts` is imported)."""
def _section_is_declared(section: str) -> Plan:
    def needs(spec: HostSpec) -> bool:
        value: Any = spec
        for part in section.split("."):
            value = getattr(value, part, None)
        return not (value is None or value is False or (isinstance(value, (list, dict, tuple)) and not value))

    return needs


def fact(*commands: Command, section: str, needs: Plan | None = None) -> Callable[[Callable], Callable]:
    """Declare the decorated `read(reader, *args)` as the host fact of its name (see the package docstring).

    `needs` defaults to "the section is declared" (read once, no arguments)."""

    def declare(read: Callable) -> Callable:
        name = read.__name__
        if name in FACTS:
            raise ValueError(f"host fact {name!r} is declared twice ({FACTS[name].read.__module__}, {read.__module__})")
        allow(*commands)
        FACTS[name] = Fact(name, tuple(commands), read, section, needs or _section_is_declared(section),
                           (read.__doc__ or "").strip())
        return read

    return declare


class Reader:
    """What a fact's `read` gets: sends only that fact's declared commands, and reads other facts."""

    def __init__(self, facts: HostFacts, fact_: Fact):
        self._facts = facts
        self._fact = fact_
        self.name = facts.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._facts, name)  # other facts (`reader.unit(name)`), the connection

    def result(self, command: Command, *, timeout_s: float | None = None, **args: Any) -> CommandResult:
        """Run one of this fact's commands, rendered with `args` (each checked against its kind)."""
        if command not in self._fact.commands:
            raise TypeError(f"host fact {self._fact.name!r} did not declare command {command.name!r}")
        return self._facts.connection.run(command.render(**args), timeout_s=timeout_s)

    def output(self, command: Command, *, ok_rcs: tuple[int, ...] = (0,), timeout_s: float | None = None,
               **args: Any) -> str:
        """stdout of one of this fact's commands; CommandFailed (with the output's end) on another exit code."""
        result = self.result(command, timeout_s=timeout_s, **args)
        if result.rc not in ok_rcs:
            raise CommandFailed(self.name, result.command, failure_text(result))
        return result.stdout


def failure_text(result: CommandResult) -> str:
    """`exit code N: <the end of stderr, or of stdout when stderr is empty>`: the cause of a failed fact command
    (nvidia-smi prints "No devices were found" on stdout; see CommandResult.failure)."""
    return result.failure


class HostFacts:
    """Facts of one host, each read once (on first use) through its Connection: `facts.<fact name>(*args)`.

    The value, or the LlmvalError reading it raised, is memoized per argument tuple, so a hung host costs
    one timeout, not one per check."""

    def __init__(self, connection: Connection):
        self.connection = connection
        self.name = connection.name
        self._cache: dict[tuple, tuple[bool, Any]] = {}

    def __repr__(self) -> str:
        return f"HostFacts({self.name!r})"

    def read(self, name: str, *args: Any) -> Any:
        """The fact `name` with `args` (memoized, errors included)."""
        key = (name, *args)
        if key not in self._cache:
            declared = FACTS[name]
            try:
                self._cache[key] = (True, declared.read(Reader(self, declared), *args))
            except LlmvalError as error:
                self._cache[key] = (False, error)
        ok, value = self._cache[key]
        if not ok:
            raise value
        return value

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name not in FACTS:
            raise AttributeError(f"{type(self).__name__} has no attribute or declared host fact {name!r}; "
                                 f"declared: {sorted(FACTS)}")
        return functools.partial(self.read, name)


def fact_plan(spec: HostSpec) -> list[tuple[str, tuple]]:
    """The facts (name, arguments) the host contract will read from `spec`, from what it declares."""
    return list(dict.fromkeys((f.name, args) for f in FACTS.values() for args in f.plan(spec)))


MAX_PREFETCH_THREADS = 128
"""Hosts read at once: each thread mostly waits on its host's commands (measured: 64 stand-in hosts at 0.5 s per
command took 17.8 s of session with 32 threads, two rounds; one round with 64)."""


def prefetch(hosts: list[tuple[HostSpec, HostFacts]]) -> None:
    """Read every planned fact of every host at once (one thread per host, each host's facts in order).

    Each fact is memoized (value or LlmvalError), so the tests then only compare. A hung host holds its
    own thread for at most its commands' timeouts; the others finish meanwhile."""

    def one(spec: HostSpec, facts: HostFacts) -> None:
        for name, args in fact_plan(spec):
            try:
                facts.read(name, *args)
            except Exception:  # memoized LlmvalErrors re-raise in the test that reads the fact
                pass

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(MAX_PREFETCH_THREADS, len(hosts)))) as pool:
        for future in [pool.submit(one, spec, facts) for spec, facts in hosts]:
            future.result()


def peer_facts(get: Callable[[str], Any], names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """`get(name)` for each peer: (values of the peers that answered, reasons of those that did not).

    Cross-host checks compare with the peers that answered; an unreachable peer fails its own checks."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name in names:
        try:
            values[name] = get(name)
        except LlmvalError as error:
            errors[name] = str(error).splitlines()[0]
    return values, errors
