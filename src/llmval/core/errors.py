"""Errors raised when the suite could not *check* something.

A deployment that breaks its contract is a plain failed assertion in a test. These exceptions mean
the suite could not judge: bad input, an unreachable host, output it cannot parse, a stack that never
became ready. They surface as ERROR (or a usage error), never as a pass or a skip.

    LlmvalError
     ├── InventoryError      the inventory file is missing, malformed or invalid (file, key path, reason)
     ├── ParseError          host or engine output is not in the expected format (source, line, excerpt)
     │    └── BaselineInvalid    (llmval.load) a stored perf baseline this suite could not have saved (the file)
     ├── HostError           a command on a host could not be run to completion
     │    ├── HostUnreachable    the transport could not connect
     │    ├── CommandTimeout     the command ran past its timeout and was killed
     │    ├── CommandFailed      the command exited non-zero where success was required (its own words: the end
     │    │    │                 of stderr, or of stdout when stderr is empty)
     │    │    └── GpusLost          (llmval.hostfacts) nvidia-smi says the GPUs are gone ("No devices were found")
     │    └── TeardownError      (llmval.launch) a stop step failed or something of ours was left running
     ├── EndpointError       an HTTP endpoint did not answer usefully (status, body excerpt); `llmval.io.http` turns
     │    │                  every httpx error into one of these (`httpx_errors`, `HTTPX_ERRORS`)
     │    ├── EndpointUnreachable    no connection: refused, reset, name not resolved, or it broke mid-answer
     │    ├── EndpointTimeout        no answer within the timeout (connect, read, write or pool)
     │    ├── EndpointProtocolError  the answer is not well-formed HTTP, or not the event stream asked for
     │    ├── TokenizeFailed         the engine's POST /tokenize answered, but not with token ids (an HTTP error,
     │    │                          not JSON, no tokens): prompt lengths are then counted another way
     │    └── ModelNotServed         (llmval.engines) the endpoint does not serve the inventory's model
     ├── NotExposed          (llmval.engines) the engine does not expose a fact (no /metrics, no log source)
     ├── ImpossibleMetric    (llmval.engines) a figure from the engine's metrics is outside its physical range (a hit
     │                       rate above 1, an acceptance length above 1 + draft tokens, a counter that dropped)
     ├── StaleEvidence       (llmval.engines.serving_process) the engine log is of a server that does not answer now
     ├── ServingProcessGone  (llmval.hostfacts) the serving process whose environment a check reads is not there
     ├── NotReported         (llmval.gpu.health) a GPU health field is [N/A] / Not Supported, or no kernel log reads
     ├── ReplayMiss          --replay has no recorded answer for a command or request
     ├── RecordingError      a --replay folder is not a recording (file, line, reason): bad line, not a regular
     │                       file, over the size cap, a command off the read-only allow-list, two that disagree
     ├── ReportsNotWritable  (llmval.report) the reports folder (or a report in it) cannot be written
     ├── TextfileNotWritable (llmval.report) the --prometheus-textfile cannot be written (no such folder, no .prom)
     ├── TrendRefused        (llmval.report) `llmval trend` cannot read a results file, or they are of two deployments
     ├── UnsafeArgument      (llmval.io.command) a value would read as an option or break a read-only command
     ├── NotReady            a stack did not become ready (what, deadline, last observation)
     │    ├── Crashed            (llmval.launch) our process exited, the unit failed, the container exited
     │    ├── CrashLoop          (llmval.launch) the unit's or container's restart counter climbed
     │    ├── Hung               (llmval.launch) no new log output for the no-progress window
     │    ├── PortInUse          (llmval.launch) the endpoint's port was taken before launch
     │    └── PortHeld           (llmval.launch) another --launch run holds the endpoint, or what answers ready
     │                           is not this launch's process
     ├── OtherLoad           (llmval.load) other clients loaded the server during every perf measurement attempt
     ├── ClientHostBusy      (llmval.load) the client host was busy (other processes, steal) during every attempt
     ├── UnverifiedTokenCount  (llmval.load) streams' usage claimed a token count what arrived cannot back (above
     │                       max_tokens, below the chunks with output, above what the text could hold)
     ├── NotJudged           (llmval.underload) a correctness-under-load gate could not be judged (load not held,
     │                       a probe not answered or unstable idle, no probe right idle)
     ├── MachineNotCalibrated  (llmval.load) gates relative to the machine: the engine is not on this host, or the
     │                       calibration did not run
     ├── VllmBenchFailed     (llmval.bench) `vllm bench serve` did not run or wrote no result
     ├── BudgetError         (llmval.grid) a grid's prompt cannot fit its token budget
     ├── CellNotMeasured     (llmval.grid) a grid cell was not measured (time budget spent, request failed)
     └── TranscriptError     (llmval.agentic) an agent transcript cannot be built as asked

`selftest/serving/test_error_boundary.py` keeps this tree equal to the classes (names and parents) and checks
that each is exported by its package.
"""

from __future__ import annotations

from .contract import excerpt as _excerpt
from .contract import shorten as _shorten


class LlmvalError(Exception):
    """Base class: the suite could not check something."""

    depends_on: tuple[str, ...] = ()
    """Check ids whose failure explains this error (the status document groups it under them)."""
    reason: str = ""
    """The cause this error shares with others, without the check's own target (the recording has no answer
    for `POST /tokenize`); errors of one reason are one root cause in the reports. Empty: the message is it."""
    hint: str = ""
    """What to do about it, for a person reading the root cause (a class's own, or set on the instance); the reports
    give a root cause without one a generic fix (`llmval.report.status.root_causes`)."""


def printable(text: str, limit: int = 300) -> str:
    """`text` safe for a terminal: control characters escaped (ESC becomes the four characters `\\x1b`), cut
    to `limit` characters with the cut said (`… [399 more characters]`)."""
    out = "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in text)
    return out if len(out) <= limit else f"{out[:limit]}… [{len(out) - limit} more characters]"


class InventoryError(LlmvalError):
    """The inventory is unreadable or invalid; the message names the file, the key path of each problem and
    the reason, with control characters escaped and long values shortened."""

    def __init__(self, path: str, problems: list[tuple[str, str]]):
        self.path = path
        self.problems = problems
        lines = [f"invalid inventory {printable(path)}:"]
        lines += [f"  {printable(where, 200)}: {printable(reason)}" if where else f"  {printable(reason)}"
                  for where, reason in problems]
        super().__init__("\n".join(lines))


class ParseError(LlmvalError):
    """Output that should follow a known format does not."""

    def __init__(self, source: str, reason: str, excerpt: str = "", *, position: int | None = None):
        self.source = source
        self.reason = reason
        self.excerpt = excerpt
        self.position = position
        """Where in the text it stopped making sense (a JSON decoder's offset), when known."""
        message = f"cannot parse {source}: {reason}"
        if excerpt:
            message += f"\n  excerpt: {_excerpt(excerpt)}"
        super().__init__(message)


class HostError(LlmvalError):
    """A command on a host could not be run to completion."""

    def __init__(self, host: str, command: str, reason: str):
        self.host = host
        self.command = command
        self.reason = reason
        super().__init__(f"[{host}] {reason}\n  command: {_shorten(command, 300)}")


class HostUnreachable(HostError):
    """The transport to the host could not connect."""

    depends_on = ("hosts.reachable",)


class CommandTimeout(HostError):
    """The command ran past its timeout and was killed."""


class CommandFailed(HostError):
    """The command exited non-zero where success was required."""


class EndpointError(LlmvalError):
    """An HTTP endpoint did not answer usefully. Translated from a foreign error (`llmval.io.http.httpx_errors`):
    `kind` is its class name (`ReadTimeout`) and `detail` its own words; both empty otherwise."""

    status: int = 0
    """The HTTP status of an answer that was an error (500), 0 when no answer came: an engine that answers a plain
    request with a server error broke the contract, where one that does not answer could not be checked."""

    hint = "the endpoint did not answer usefully (its words are quoted above): read the engine's log for why"

    def __init__(self, message: str, *, kind: str = "", detail: str = "", status: int = 0):
        super().__init__(message)
        self.kind, self.detail, self.status = kind, detail, status


class EndpointUnreachable(EndpointError):
    """No connection to the endpoint: refused, reset, the name not resolved, or it broke mid-answer."""

    hint = ("nothing answers at the endpoint's address: is the engine running (its unit, container or process) and "
            "is base_url right? `ss -ltnp` on its host shows what listens")


class EndpointTimeout(EndpointError):
    """The endpoint did not answer within the timeout (connect, read, write, or waiting for a connection)."""

    hint = ("the endpoint took the request but did not answer in time: the engine is hung or overloaded; read its "
            "log, and raise request_timeout_s only if so long an answer is expected")


class EndpointProtocolError(EndpointError):
    """The endpoint's answer is not well-formed HTTP, or not the event stream that was asked for."""


class TokenizeFailed(EndpointError):
    """The engine has a `POST /tokenize` and it answered, but not with token ids: an HTTP error (SGLang 0.5.17
    answers 500 for a tokenizer whose model_max_length overflows its JSON encoder), a body that is not JSON, no
    tokens. The server still serves: perf and the accuracy grids count prompt tokens with the usage of a 1-token
    completion instead (and say so), and `serving.tokenize` reports the broken endpoint as its own finding."""


class ReplayMiss(LlmvalError):
    """A replayed run asked for something the recording does not hold."""

    hint = ("the recording holds no answer for this: replay it with the inventory and the -m/-k selection it was "
            "recorded with, or record it again (--record) with this selection")


class RecordingError(LlmvalError):
    """A `--replay` folder cannot be replayed: the message names the file (and line) and the reason, control
    characters escaped, long values shortened, as InventoryError does for an inventory."""

    def __init__(self, where: str, reason: str):
        self.where = where
        self.reason = reason
        super().__init__(f"invalid recording {printable(where, 400)}: {printable(reason, 600)}")


class NotReady(LlmvalError):
    """A stack did not become ready before its deadline, or crashed or hung on the way."""


class UnsafeArgument(LlmvalError):
    """A value cannot be an argument of a read-only command or of a transport (it would read as an option,
    or it holds characters its kind does not allow). Raised before anything is sent."""

    def __init__(self, command: str, field_name: str, value: object, reason: str):
        shown = repr(str(value)[:80])
        super().__init__(f"refused to build `{command}`: {field_name}={shown} {reason}")
        self.command, self.field_name, self.value, self.reason = command, field_name, value, reason
