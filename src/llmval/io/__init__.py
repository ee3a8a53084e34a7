"""The I/O seams: every byte to or from a host or an endpoint passes here, and nowhere else.

    command    the one vocabulary of read-only host commands (templates, typed arguments, the allow-list)
    transport  runs a rendered, declared command on an inventory host through pytest-testinfra
    http       HTTP clients for serving endpoints (httpx errors translated here, and only here)
    bounded    transports with a whole-request deadline and a body size cap, counted on the wire and after decoding
    h11transport  the async client's transport straight on h11 (no loop turn before the write), bounded alike
    wire       the perf gates' streaming client (HTTP/1.1 + SSE in one asyncio Protocol), bounded alike
    sse        the one reading of every event stream: bytes to events, [DONE] and finish rules, counts beside usage
    answers    the shapes of OpenAI-compatible answers, validated before anything reads them
    recording  records every command and HTTP exchange of a run and answers them again offline

May import `llmval.core` and the inventory models (`llmval.inventory`); nothing that judges.
"""
