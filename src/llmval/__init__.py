"""llmval: prove, with evidence, that an LLM inference deployment is what its inventory says.

Pure logic lives here (inventory models, parsers, measurement math, record/replay); the pytest plugins
in `fixtures/` fetch facts with it and the contract tests in `tests/` judge them.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

# The root assembles the layers' declarations before anything reads them: the adapter registry hands the
# inventory its engine kinds (`llmval.inventory.use_engine_registry`) and the host facts put their commands on the
# read-only allow-list (`llmval.io.command.COMMANDS`) that transports and replays check. The lower layers never
# import these upper ones (pyproject.toml `[tool.importlinter]`).
from . import engines, hostfacts  # noqa: F401  (imported for the declarations they make)
from .core.contract import mismatch, redact
from .core.errors import (
    CommandFailed,
    CommandTimeout,
    EndpointError,
    EndpointProtocolError,
    EndpointTimeout,
    EndpointUnreachable,
    HostError,
    HostUnreachable,
    InventoryError,
    LlmvalError,
    NotReady,
    ParseError,
    RecordingError,
    ReplayMiss,
    TokenizeFailed,
    UnsafeArgument,
)
from .core.verdict import Cause, Verdict
from .inventory import Inventory, inventory_json_schema, load_inventory
from .io.recording import CommandResult, Recorder, Replay

DISTRIBUTION = "pytest-llmval"
"""The name on the package index (`pip install pytest-llmval`): the index's `llmval` is another project. The import
package and the console script are `llmval`."""
try:
    __version__ = _version(DISTRIBUTION)
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "DISTRIBUTION",
    "Cause",
    "CommandFailed",
    "CommandResult",
    "CommandTimeout",
    "EndpointError",
    "EndpointProtocolError",
    "EndpointTimeout",
    "EndpointUnreachable",
    "HostError",
    "HostUnreachable",
    "Inventory",
    "InventoryError",
    "LlmvalError",
    "NotReady",
    "ParseError",
    "Recorder",
    "RecordingError",
    "Replay",
    "ReplayMiss",
    "TokenizeFailed",
    "UnsafeArgument",
    "Verdict",
    "inventory_json_schema",
    "load_inventory",
    "mismatch",
    "redact",
]
