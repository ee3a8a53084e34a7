"""A STUB engine for launch self-tests: prints start-up lines, then serves /health and /v1/models.

    python selftest/launch/stub_server.py PORT [--start-delay S] [--orphan] [--ignore-term]

--orphan starts a child that leaves our process group (setsid), as a misbehaving engine might;
--ignore-term ignores SIGTERM, so teardown has to SIGKILL the group.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        bodies = {"/health": b"", "/v1/models": json.dumps(
            {"object": "list", "data": [{"id": "stub", "object": "model", "max_model_len": 8192}]}).encode()}
        body = bodies.get(self.path.split("?")[0])
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, format: str, *args: object) -> None:
        print("stub: " + format % args, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--start-delay", type=float, default=0.5)
    parser.add_argument("--orphan", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    args = parser.parse_args()
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.orphan:
        subprocess.Popen(["setsid", "sleep", "300"])
    print(f"stub: loading (pid {os.getpid()})", flush=True)
    time.sleep(args.start_delay)  # stands in for model loading
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"stub: serving on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
