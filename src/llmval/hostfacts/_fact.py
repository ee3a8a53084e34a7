"""The fact registry: `@fact(...)` declares a host fact once; `HostFacts` reads declared facts of one host.

See the package docstring (`llmval.hostfacts`) for how to declare a fact.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import dataclasses
import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..core.errors import CommandFailed, LlmvalError
from ..inventory import HostSpec
from ..io.command import COMMANDS, GLOB, PATH, Rendered, allow, family_of, is_read_only
from ..io.recording import CommandResult
from ..io.transport import Connection
from ._command import Command

__all__ = ["COMMANDS", "FACTS", "Fact", "HostFacts", "Prefetch", "Reader", "allow", "fact", "fact_plan",
           "failure_text", "family_of", "is_read_only", "judged_fields", "peer_facts", "prefetch",
           "read_ahead", "watch_reads"]

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
    judges: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Inventory fields (dotted, in `[[hosts]]`) this fact is evidence for -> the check ids (globs) whose
    verdicts judge them: what `llmval.report.judged` lists when a declared field was judged by none."""
    ahead_if: Callable[[HostFacts], bool] | None = None
    """`ahead_if(facts)`: a planned fact the checks read only when other facts say so (GPU memory per process
    only where GPU holders were found) is read ahead (`Prefetch`) only when this holds; a check that still
    asks for it reads it then. An LlmvalError raised by it means False."""

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


def _check_ids(checks: str | tuple[str, ...]) -> tuple[str, ...]:
    ids = (checks,) if isinstance(checks, str) else tuple(checks)
    if not ids or not all(isinstance(c, str) and c.startswith("hosts.") for c in ids):
        raise ValueError(f"check ids must be non-empty `hosts.<subject>.<property>` ids (globs), got {checks!r}")
    return ids


def fact(*commands: Command, section: str, needs: Plan | None = None, checks: str | tuple[str, ...] = (),
         judges: dict[str, str | tuple[str, ...]] | None = None,
         ahead_if: Callable[[HostFacts], bool] | None = None) -> Callable[[Callable], Callable]:
    """Declare the decorated `read(reader, *args)` as the host fact of its name (see the package docstring).

    `needs` defaults to "the section is declared" (read once, no arguments). `checks` names the check ids
    (globs) that judge the `section` field; `judges` maps several fields of the section to their checks
    (`{"gpus.count": "hosts.gpu.count", ...}`). Either makes the field a fact the run must judge
    (`llmval.report.judged`): a declared field that no held or broken verdict of those checks judged keeps the run
    from GREEN. `ahead_if(facts)`: the planned fact is read ahead only when it holds on that host's facts
    (`Fact.ahead_if`)."""
    judged = {field: _check_ids(ids) for field, ids in (judges or {}).items()}
    if checks:
        judged[section] = _check_ids(checks)
    outside = [f for f in judged if f != section and not f.startswith(section + ".")]
    if outside:
        raise ValueError(f"judges= names fields outside the fact's section {section!r}: {outside}")

    def declare(read: Callable) -> Callable:
        name = read.__name__
        if name in FACTS:
            raise ValueError(f"host fact {name!r} is declared twice ({FACTS[name].read.__module__}, {read.__module__})")
        allow(*commands)
        FACTS[name] = Fact(name, tuple(commands), read, section, needs or _section_is_declared(section),
                           (read.__doc__ or "").strip(), judged, ahead_if)
        return read

    return declare


def judged_fields() -> dict[str, tuple[str, ...]]:
    """Every `[[hosts]]` field a declared fact is evidence for -> the check ids judging it (the union over the
    facts that name it, first declaration first), in the order the facts were declared."""
    fields: dict[str, tuple[str, ...]] = {}
    for declared in FACTS.values():
        for field, ids in declared.judges.items():
            fields[field] = tuple(dict.fromkeys(fields.get(field, ()) + ids))
    return fields


_READS: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar("llmval_reads", default=None)
"""(host, path) pairs of the facts read in this context: a test's (`watch_reads`), or a fact's being read."""


def watch_reads() -> list[tuple[str, str]]:
    """From now on, in this thread's context (one test), collect the (host, path) pairs of every fact read: the
    typed path arguments (`PATH`, `GLOB`) of the declared commands it sent, cached reads included. Returns the
    list it fills (the verdicts' `paths`)."""
    reads: list[tuple[str, str]] = []
    _READS.set(reads)
    return reads


def _path_args(host: str, command: Rendered) -> list[tuple[str, str]]:
    found = []
    for key, value in command.args.items():
        if command.family.kinds.get(key) in (PATH, GLOB):
            found += [(host, str(v)) for v in (value if isinstance(value, (list, tuple)) else [value])]
    return found


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
        rendered = command.render(**args)
        if (reads := _READS.get()) is not None:
            reads += _path_args(self.name, rendered)
        return self._facts.connection.run(rendered, timeout_s=timeout_s)

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


_IN_FACT = threading.local()
"""`depth`: how many fact reads this thread is inside (a fact's `read` reading another fact)."""


class HostFacts:
    """Facts of one host, each read once (on first use) through its Connection: `facts.<fact name>(*args)`.

    The value, or the LlmvalError reading it raised, is memoized per argument tuple, so a hung host costs
    one timeout, not one per check. Safe to share between threads: a fact being read by one thread (a
    background `Prefetch`) is waited for by the others, never read twice."""

    def __init__(self, connection: Connection):
        self.connection = connection
        self.name = connection.name
        self._cache: dict[tuple, tuple[bool, Any]] = {}
        self._reading: dict[tuple, threading.Event] = {}
        self._lock = threading.Lock()
        self._paths: dict[tuple, tuple[tuple[str, str], ...]] = {}
        self._ahead: dict[tuple, threading.Event] = {}
        """The facts a `Prefetch` thread will read, each set once that thread is done with it (read or left)."""
        self._ahead_thread: int | None = None
        self._ahead_by: Prefetch | None = None

    def __repr__(self) -> str:
        return f"HostFacts({self.name!r})"

    def is_read(self, name: str, *args: Any) -> bool:
        """True once the fact `name` with `args` has been read (its value or its error is memoized)."""
        return (name, *args) in self._cache

    def read(self, name: str, *args: Any) -> Any:
        """The fact `name` with `args` (memoized, errors included; waits while another thread reads it)."""
        key = (name, *args)
        ahead = self._ahead.get(key)
        if ahead is not None and not ahead.is_set() and key not in self._cache \
                and threading.get_ident() != self._ahead_thread and not getattr(_IN_FACT, "depth", 0):
            # its Prefetch thread reads it in its turn (the host sees one command at a time): asked now, it is
            # that thread's next read. A fact read inside another fact's read does not wait (that thread may be
            # waiting for the outer one): it is read here.
            if self._ahead_by is not None:
                self._ahead_by.want(name)
            ahead.wait()
        while key not in self._cache:
            with self._lock:
                if key in self._cache:
                    break
                other = self._reading.get(key)
                if other is None:
                    self._reading[key] = mine = threading.Event()
            if other is not None:
                other.wait()  # that thread memoizes it; if it raised something else, the loop reads it here
                continue
            try:
                declared = FACTS[name]
                reads: list[tuple[str, str]] = []
                token = _READS.set(reads)  # the paths this fact's commands (and the facts it reads) name
                _IN_FACT.depth = getattr(_IN_FACT, "depth", 0) + 1
                try:
                    try:
                        result = (True, declared.read(Reader(self, declared), *args))
                    except LlmvalError as error:
                        result = (False, error)
                finally:
                    _IN_FACT.depth -= 1
                    _READS.reset(token)
                self._paths[key] = tuple(dict.fromkeys(reads))  # before the value: a waiting thread reads both
                self._cache[key] = result
            finally:
                with self._lock:
                    del self._reading[key]
                mine.set()
        if (watching := _READS.get()) is not None:
            watching += self._paths.get(key, ())
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


def read_ahead(declared: Fact, facts: HostFacts) -> bool:
    """Whether `Prefetch` reads the planned fact `declared` of that host now: unless its `ahead_if` says no."""
    if declared.ahead_if is None:
        return True
    try:
        return bool(declared.ahead_if(facts))
    except LlmvalError:
        return False


MAX_PREFETCH_THREADS = 128
"""Hosts read at once: each thread mostly waits on its host's commands (measured: 64 stand-in hosts at 0.5 s per
command took 17.8 s of session with 32 threads, two rounds; one round with 64)."""


class Prefetch:
    """Reads every planned fact of the given hosts in the background: one thread per host (at most
    `max_threads` at once), each host's facts one after another, so a host sees one command at a time from it.
    A fact with `ahead_if` is read only when that holds on the facts read before it (`read_ahead`).

    Checks do not wait for the whole read: a check that asks for a planned fact not read yet waits for that
    host's thread, which reads it next (`want`: every host's thread reads that fact next, since the same check
    runs for the next hosts); facts read inside another fact's read, and unplanned ones, are read by whoever
    asks. So checks run while later facts are still being read. A hung host holds its own thread for at most
    its commands' timeouts; the others go on meanwhile. `stop()` leaves the facts not yet started unread (a
    session that ends early, `-x`): whoever asks for one then reads it."""

    def __init__(self, hosts: list[tuple[HostSpec, HostFacts]], *, max_threads: int = MAX_PREFETCH_THREADS):
        self._stopped = threading.Event()
        self._hosts = hosts
        self._rank: dict[str, int] = {name: at for at, name in enumerate(FACTS)}
        self._wants = itertools.count(1)
        self._rank_lock = threading.Lock()
        plans = []
        for spec, facts in hosts:
            plan = fact_plan(spec)
            facts._ahead = {(name, *args): threading.Event() for name, args in plan}
            facts._ahead_by = self
            plans.append(plan)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(max_threads, len(hosts))),
                                                           thread_name_prefix="llmval-prefetch")
        self._futures = [self._pool.submit(self._read_plan, plan, facts)
                         for (_, facts), plan in zip(hosts, plans, strict=True)]
        self._pool.shutdown(wait=False)

    def _read_plan(self, plan: list[tuple[str, tuple]], facts: HostFacts) -> None:
        facts._ahead_thread = threading.get_ident()
        left = list(plan)
        try:
            while left:
                with self._rank_lock:
                    name, args = left.pop(min(range(len(left)), key=lambda i: self._rank[left[i][0]]))
                if self._stopped.is_set():
                    return
                try:
                    if read_ahead(FACTS[name], facts):
                        facts.read(name, *args)
                except Exception:  # memoized LlmvalErrors re-raise in the check that reads the fact; others there
                    pass
                finally:
                    facts._ahead[(name, *args)].set()
        finally:
            _release(facts)

    def want(self, name: str) -> None:
        """A check waits for fact `name`: every host's thread reads it next, after its current read (the last
        fact asked for first)."""
        with self._rank_lock:
            self._rank[name] = -next(self._wants)

    def wait(self) -> None:
        """Until every host's planned facts are read (or the prefetch was stopped)."""
        for future in self._futures:
            if not future.cancelled():
                future.result()

    def stop(self) -> None:
        """Start no further read: hosts not begun are dropped, running ones stop after their current fact."""
        self._stopped.set()
        for future in self._futures:
            future.cancel()
        for future, (_, facts) in zip(self._futures, self._hosts, strict=True):
            if future.cancelled():
                _release(facts)


def _release(facts: HostFacts) -> None:
    """The Prefetch of `facts` reads no more of them: whoever waits for one reads it itself."""
    for event in facts._ahead.values():
        event.set()


def prefetch(hosts: list[tuple[HostSpec, HostFacts]]) -> None:
    """Read every planned fact of every host at once and return when all are read (`Prefetch(...).wait()`)."""
    Prefetch(hosts).wait()


PEER_READ_S = 0.05
"""A peer's fact that took longer than this was read, not memoized: the remaining peers are then read at once."""


def peer_facts(get: Callable[[str], Any], names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """`get(name)` for each peer: (values of the peers that answered, reasons of those that did not), in the
    order of `names`.

    Cross-host checks compare with the peers that answered; an unreachable peer fails its own checks. Peers
    are asked one by one while their facts are memoized (a prefetched run); the first that has to be read
    (an xdist worker that does not own that host) makes the rest be read at once, one thread per peer."""
    answers: dict[str, tuple[bool, Any]] = {}

    def ask(name: str) -> None:
        try:
            answers[name] = (True, get(name))
        except LlmvalError as error:
            answers[name] = (False, str(error).splitlines()[0])

    for at, name in enumerate(names):
        started = time.monotonic()
        ask(name)
        rest = names[at + 1:]
        if len(rest) > 1 and time.monotonic() - started > PEER_READ_S:
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(MAX_PREFETCH_THREADS, len(rest)),
                                                       thread_name_prefix="llmval-peers") as pool:
                list(pool.map(ask, rest))
            break
    values = {name: answers[name][1] for name in names if answers[name][0]}
    errors = {name: answers[name][1] for name in names if not answers[name][0]}
    return values, errors
