"""Long-context agentic tool calls: carry a fact from deep in an agent transcript into a tool call's arguments.

Transcripts are built from a seed (`transcript`), fitted to a token budget with the server's own tokenizer
(`llmval.grid.ServerTokenCounter`, tools included), scored judge-free on the parsed call (`scorer`: JSON valid,
schema valid, exactly one call, the value exact; near-misses named), planned as a grid of (mode, needle
kind, context length, depth) cells with gates from the inventory's `[[agentic]]` (`grid`), and measured
cell by cell through the engine adapter (`runner`), streamed and not, declared for the grid plugin in `kind`
(the `agentic` grid kind); what every grid shares is `llmval.grid`'s.
"""

from .grid import AgenticCell, AgenticPrompt, AgenticResult, build_prompt, plan_cells, request_body
from .kind import AGENTIC
from .runner import CHECK_PREFIX, AgenticRunner
from .scorer import CONTEXT_LIMIT_RE, CallScore, score_call, score_http_failure
from .transcript import (
    AGENT_TOOLS,
    NEEDLE_KINDS,
    TARGET_TOOLS,
    Needle,
    Step,
    Transcript,
    TranscriptError,
    build_transcript,
)

__all__ = [
    "AGENTIC",
    "AGENT_TOOLS",
    "CHECK_PREFIX",
    "CONTEXT_LIMIT_RE",
    "NEEDLE_KINDS",
    "TARGET_TOOLS",
    "AgenticCell",
    "AgenticPrompt",
    "AgenticResult",
    "AgenticRunner",
    "CallScore",
    "Needle",
    "Step",
    "Transcript",
    "TranscriptError",
    "build_prompt",
    "build_transcript",
    "plan_cells",
    "request_body",
    "score_call",
    "score_http_failure",
]
