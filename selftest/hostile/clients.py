"""Each HTTP client of the suite asked once for one URL, in a process of its own, so its time and peak memory are
its own: `python -m selftest.hostile.clients CLIENT URL TIMEOUT_S` prints one JSON line
`{"error": ..., "elapsed_s": ..., "peak_rss_mb": ...}` (error "" when the answer was read whole).

    httpx        llmval.io.http.make_client: the checks' client (GET, body read whole)
    httpx-async  make_async_client: the async checks' client (httpcore under AsyncBoundedTransport)
    h11          make_async_client(asyncio_native=True): the load's probes, prompts and /metrics sampler
    wire         llmval.load.WireClient: the perf gates' streams (POST, SSE folded into a timed record)
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time

CLIENTS = ("httpx", "httpx-async", "h11", "wire")
PAYLOAD = {"model": "smollm2", "prompt": "hi", "max_tokens": 8, "stream": True,
           "stream_options": {"include_usage": True}}


def ask(client: str, url: str, timeout_s: float) -> str:
    """The error the client ends with ("" when it read the whole answer); never raises for the server's doing."""
    from urllib.parse import urlsplit

    from llmval.core.errors import EndpointError
    from llmval.io.http import httpx_errors, make_async_client, make_client

    parts = urlsplit(url)
    base, path = f"{parts.scheme}://{parts.netloc}", parts.path
    if client == "httpx":
        try:
            with httpx_errors(f"GET {url}"), make_client(base, timeout_s=timeout_s) as sync:
                sync.get(path)
            return ""
        except EndpointError as error:
            return str(error)
    if client == "wire":
        try:
            from llmval.load import WireClient
        except ImportError:  # before issue 32 the perf client lived in llmval.load._wire
            from llmval.load._wire import WireClient

        async def stream() -> str:
            async with WireClient(base, timeout_s=timeout_s) as wire:
                return (await wire.stream(PAYLOAD, path=path)).error

        return asyncio.run(stream())

    async def get() -> str:
        try:
            with httpx_errors(f"GET {url}"):
                async with make_async_client(base, timeout_s=timeout_s, asyncio_native=client == "h11") as session:
                    await session.get(path)
            return ""
        except EndpointError as error:
            return str(error)

    return asyncio.run(get())


def peak_rss_kib() -> int:
    """This process's own peak resident memory: VmHWM of /proc/self/status. Not ru_maxrss, which keeps across exec
    the high-water mark of the process that spawned it (an xdist worker of 436 MB made every client "436 MB")."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(argv: list[str]) -> int:
    client, url, timeout_s = argv[0], argv[1], float(argv[2])
    import llmval.io.http
    if client == "wire":
        import llmval.load  # noqa: F401
    started = time.monotonic()
    try:
        error = ask(client, url, timeout_s)
    except Exception as unexpected:
        error = f"UNEXPECTED {type(unexpected).__name__}: {unexpected}"
    print(json.dumps({"error": error[:2000], "elapsed_s": round(time.monotonic() - started, 2),
                      "peak_rss_mb": round(peak_rss_kib() / 1024)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
